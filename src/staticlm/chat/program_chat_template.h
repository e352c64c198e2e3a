// SPDX-License-Identifier: Apache-2.0
// Which chat template a program is chatted with, and how its turns end: a template file given by
// the user (--chat-template), else the program's embedded chat_template.jinja, else the
// chat_template of its embedded tokenizer_config.json, else staticlm's ChatML default
// (docs/chat.md), with a one-line notice saying so.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "staticlm/chat/chat_template.h"
#include "staticlm/format/program_file.h"
#include "staticlm/llm/tokenizer/tokenizer.h"

namespace staticlm {

// The name the exporter embeds a chat template under.
inline constexpr std::string_view kEmbeddedChatTemplate = "chat_template.jinja";

struct ProgramChatTemplate {
  ChatTemplate chat_template;
  bool is_default = false;
  std::string notice;  // one line for the user when the default is used; empty otherwise
  // How a reply ends besides the program's end-of-sequence ids: the turn-end markers the template
  // writes, as token ids where the tokenizer has them as one token, else as stop strings.
  std::vector<int32_t> end_of_turn_ids;
  std::vector<std::string> stop_strings;
};

// Where the program's own template is, without parsing it: "embedded chat_template.jinja",
// "embedded tokenizer_config.json", or nullopt when it carries none. Fails, as loading would,
// when tokenizer_config.json holds a chat_template of the wrong shape.
Result<std::optional<std::string>> program_chat_template_origin(const ProgramFile& file);

// Fails with the reader's error for an unreadable override file, InvalidArgument for a template
// that is not UTF-8 or does not parse (naming where it came from, the line and the column).
Result<ProgramChatTemplate> load_program_chat_template(const ProgramFile& file, const Tokenizer& tokenizer,
                                                       const std::string& override_path = {});

}  // namespace staticlm
