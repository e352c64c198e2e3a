// SPDX-License-Identifier: Apache-2.0
// JSON Schema to GBNF: the subset OpenAI's structured outputs and llama.cpp's converter take
// (docs/structured_output.md has the table): type (with unions), properties, required,
// additionalProperties, enum, const, items, prefixItems, minItems, maxItems, anyOf, oneOf, $ref
// to $defs / definitions (recursion included), minLength, maxLength, pattern (a regex subset),
// format date / time / date-time / uuid, and minimum / maximum / exclusiveMinimum /
// exclusiveMaximum on integers. Annotations (title, description, default, examples, $schema, $id,
// $comment, deprecated, readOnly, writeOnly) are ignored; every other keyword is refused, never
// silently dropped. The text generated under the grammar is valid against the schema: a oneOf is
// compiled only where no value can match two of its alternatives (distinct types, distinct
// const / enum values, or a required property's distinct const / enum values), and refused
// where that cannot be shown.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "staticlm/core/result.h"

namespace staticlm {

// GBNF whose root matches the JSON text of the values `schema` accepts (no whitespace around
// them; between tokens, at most one space or a newline and up to 20 spaces or tabs). Fails with
// InvalidArgument "json_schema: ..." naming the keyword and its JSON pointer
// ("unsupported keyword 'not' at /properties/a"), for a malformed schema, one that no value can
// satisfy, and a $ref that is not local.
Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema);
// The same rules with the schema's own named `rule_name` (a GBNF rule name) and no rule named
// "root", for a grammar that embeds the schema's values in text of its own (tool calls).
Result<std::string> json_schema_rules(const nlohmann::ordered_json& schema, std::string_view rule_name);
// The same from JSON text (InvalidArgument when it is not JSON, or nests deeper than 128 levels).
Result<std::string> json_schema_to_gbnf(std::string_view schema_text);

// GBNF of any JSON object: what {"type": "json_object"} and `run --json` ask for.
std::string any_json_object_gbnf();

}  // namespace staticlm
