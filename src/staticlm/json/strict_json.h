// SPDX-License-Identifier: Apache-2.0
// Parsing of small untrusted JSON documents (safetensors headers, config files, shard indexes).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "staticlm/core/result.h"

namespace staticlm {

// Parses `text` as one JSON object. Unlike a plain nlohmann::json::parse, a key repeated inside
// any one object is refused instead of silently keeping the last value, because a checkpoint
// whose readers disagree about which duplicate wins is an attack surface.
// `file` names the document in messages. Fails with InvalidArgument for malformed JSON (the
// parser's position is in the message), a duplicate key, or a top-level value that is not an
// object; ResourceExhausted when memory runs out.
Result<nlohmann::json> parse_json_object(std::string_view text, std::string_view file);

// How deeply arrays and objects nest in JSON text, counted outside strings without parsing: a
// reader of untrusted JSON checks it first, so a hostile document cannot make the parser (or what
// walks the parsed value) recurse deeply. Malformed text gives some count; the parser refuses it.
int json_nesting_depth(std::string_view text);

// A short rendering of a JSON value for error messages: `"two"`, `[1,2]`, `null`; long values are
// cut at about 60 characters.
std::string json_preview(const nlohmann::json& value);

}  // namespace staticlm
