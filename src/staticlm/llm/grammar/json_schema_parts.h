// SPDX-License-Identifier: Apache-2.0
// Pieces of the JSON Schema compiler (json_schema_grammar.cpp), each producing GBNF text:
// literals, JSON string characters, integer ranges and the regex subset of `pattern`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/llm/grammar/grammar_ast.h"

namespace staticlm::json_schema {

// A GBNF string literal ("...") of `text`, escaped as the GBNF parser reads it.
std::string gbnf_literal(std::string_view text);

// GBNF for one character of a JSON string's content whose decoded value lies in `ranges`:
// characters a JSON string may hold as they are, and `"`, `\` and the controls in their one
// escaped spelling. Empty when `ranges` is empty.
std::string json_string_char(const std::vector<CodePointRange>& ranges);

// Any character of a JSON string's content, escapes included (what `"type": "string"` allows).
inline constexpr std::string_view kJsonCharRule =
    R"gbnf(json-char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" ([0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2})))gbnf";

// GBNF for the integers in [low, high] written as JSON writes them (no leading zeros, "-0" never).
std::string integer_range(int64_t low, int64_t high);

// GBNF for the content of a JSON string (between the quotes) whose decoded text ECMAScript's
// RegExp(pattern, "u").test() accepts. The subset: literals and escapes, ., classes with ranges
// and negation, \d \w \s \D \W \S, groups ( ) (?: ) (?<name> ), |, * + ? {n} {n,} {n,m} and their
// lazy forms, ^ at the start and $ at the end. Fails with Unimplemented naming what it meets
// outside it (backreferences, lookaround, \b, anchors elsewhere), InvalidArgument for a malformed
// pattern.
Result<std::string> pattern_to_gbnf(std::string_view pattern);

}  // namespace staticlm::json_schema
