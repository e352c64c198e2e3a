// SPDX-License-Identifier: Apache-2.0
// Every file a command reads because a flag names it (eval --text, export --options, serve
// --api-key-file and --chat-template, tokenize --tokenizer, run's prompt and system files) is read
// through here, so each refusal is one line naming the flag and the path: missing, a directory,
// unreadable, or larger than the command reads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "staticlm/core/mapped_file.h"
#include "staticlm/core/result.h"

namespace staticlm::cli {

// read_text_file's errors with the flag in front: "--text: 'models/' is a directory, not a file".
Result<std::string> read_input_file(std::string_view flag, const std::string& path,
                                    uint64_t max_bytes = kMaxTextFileBytes);

}  // namespace staticlm::cli
