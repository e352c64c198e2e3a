// SPDX-License-Identifier: Apache-2.0
// Typed reads from untrusted tokenizer JSON. Every accessor checks the type before reading (an
// nlohmann accessor on the wrong type would throw) and names the field in its error:
// "pre_tokenizer.pretokenizers[0].behavior: expected a string, found 3".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "staticlm/core/result.h"
#include "staticlm/json/strict_json.h"

namespace staticlm {

using Json = nlohmann::json;

// Parses a whole JSON document that must be an object. `file` names it in messages. Fails with
// InvalidArgument for malformed JSON (with the parser's byte position) or a non-object.
Result<Json> parse_json_document(std::string_view text, std::string_view file);

// The member `key` of `object`, or nullptr when `object` is not an object or lacks the key.
const Json* find_member(const Json& object, std::string_view key);

// "where.key", the name a field has in messages.
std::string field_name(std::string_view where, std::string_view key);

// Required string member. Fails with InvalidArgument when missing or not a string.
Result<std::string> read_string(const Json& object, std::string_view key, std::string_view where);

// Optional string member: nullopt when missing or null; InvalidArgument for other types.
Result<std::optional<std::string>> read_optional_string(const Json& object, std::string_view key,
                                                        std::string_view where);

// Boolean member with a default for missing or null; InvalidArgument for other types.
Result<bool> read_bool(const Json& object, std::string_view key, bool fallback, std::string_view where);

// Integer member with a default for missing or null; InvalidArgument for non-integers or values
// outside [min_value, max_value].
Result<int64_t> read_int(const Json& object, std::string_view key, int64_t fallback, int64_t min_value,
                         int64_t max_value, std::string_view where);

// Required array member (InvalidArgument when missing or not an array).
Result<const Json*> read_array(const Json& object, std::string_view key, std::string_view where);

// The "type" member of a component object; InvalidArgument when `component` is not an object
// or has no string "type".
Result<std::string> read_component_type(const Json& component, std::string_view where);

// A single code point given as a one-character string (Metaspace replacement, Strip content).
Result<std::string> read_single_char(const Json& object, std::string_view key, std::string_view fallback,
                                     std::string_view where);

}  // namespace staticlm
