// SPDX-License-Identifier: Apache-2.0
// Splits template text into tokens the way Jinja's lexer does under the settings Hugging Face
// renders chat templates with (trim_blocks, lstrip_blocks, a single trailing newline dropped,
// newlines normalised to "\n"), including `{%-` / `-%}` / `+%}` whitespace control, comments,
// `{% raw %}` and string escapes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"

namespace staticlm::jinja {

enum class TokenKind : uint8_t {
  kText,           // literal template text, whitespace control already applied
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,
  kString,  // text holds the unescaped value
  kInteger,
  kFloat,
  kOperator,  // text holds the operator: "+", "//", "==", "(", ...
  kEnd,
};

struct Token {
  TokenKind kind;
  std::string text;
  int line = 1;
  int column = 1;
};

struct LexerOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// Fails (InvalidArgument) on an unclosed tag, comment or string, or a character no token starts
// with; the message gives the line and column. The last token is kEnd.
Result<std::vector<Token>> tokenize(std::string_view source, const LexerOptions& options);

}  // namespace staticlm::jinja
