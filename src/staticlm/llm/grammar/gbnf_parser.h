// SPDX-License-Identifier: Apache-2.0
// GBNF, llama.cpp's grammar format, parsed into a GrammarAst (docs/structured_output.md).
//
//   root  ::= "{" ws pair ("," ws pair)* "}"     # a comment
//   pair  ::= [a-z]+ ":" ws ([0-9]{1,3} | "\"" [^"\\]* "\"")
//   ws    ::= [ \t\n]*
//
// Supported: rules `name ::= ...` (names of letters, digits, '-' and '_'), alternation `|`,
// grouping `( )`, `*` `+` `?` `{m}` `{m,}` `{m,n}` `{,n}`, literals "..." and character classes
// [...] with ranges and negation `[^...]`, `.` (any character), the escapes \n \r \t \\ \" \' \[
// \] \- \^ \/ \xHH \uHHHH \UHHHHHHHH, `#` comments. A newline ends a rule except inside
// parentheses, after `::=` or `|`, or before a line starting with `|`. Characters are Unicode code
// points (UTF-8 in the text); surrogates are refused. Not supported: llama.cpp's token references
// (`<[1000]>`, `<think>`, `!<...>`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "staticlm/core/result.h"
#include "staticlm/llm/grammar/grammar_ast.h"

namespace staticlm {

struct GbnfLimits {
  size_t max_text_bytes = 1 << 20;
  size_t max_rules = 10000;
  uint32_t max_nesting = 64;    // parentheses inside parentheses
  uint32_t max_repeat = 10000;  // the largest m or n of {m,n}
};

// Parses `text`; `root_rule` names the start rule. Fails with InvalidArgument naming the line and
// column for a syntax error, an undefined or twice-defined rule, a missing root rule, a surrogate
// or invalid UTF-8, a limit exceeded; with Unimplemented for token references.
Result<GrammarAst> parse_gbnf(std::string_view text, std::string_view root_rule = "root",
                              const GbnfLimits& limits = GbnfLimits{});

}  // namespace staticlm
