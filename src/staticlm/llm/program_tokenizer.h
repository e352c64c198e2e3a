// SPDX-License-Identifier: Apache-2.0
// The tokenizer a program carries: built from its embedded tokenizer.json (with
// tokenizer_config.json when present) or tokenizer.model.
#pragma once

#include <memory>

#include "staticlm/core/result.h"
#include "staticlm/format/program_file.h"
#include "staticlm/llm/tokenizer/tokenizer.h"

namespace staticlm {

// Fails with NotFound when the program embeds no tokenizer file, or with the tokenizer
// loader's error naming the embedded file.
Result<std::unique_ptr<Tokenizer>> load_program_tokenizer(const ProgramFile& file);

}  // namespace staticlm
