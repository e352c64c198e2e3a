// SPDX-License-Identifier: Apache-2.0
// JSON in and out of template values: request messages and tools become Values, and the tojson
// filter writes text exactly as Python's json.dumps does (transformers' tojson calls it with
// ensure_ascii=False).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "staticlm/chat/jinja/value.h"

namespace staticlm::jinja {

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;          // the text of one level; absent: everything on one line
  std::optional<std::string> item_separator;  // default ", " (or "," when indenting)
  std::optional<std::string> key_separator;   // default ": "
  bool sort_keys = false;
  size_t max_bytes = SIZE_MAX;  // the text may not grow past this (ResourceExhausted)
};

// Fails (InvalidArgument) for a value JSON cannot hold ("Object of type Undefined is not JSON
// serializable"), ResourceExhausted when the text would pass options.max_bytes.
Result<std::string> dump_json(const Value& value, const JsonDumpOptions& options);

// Objects become dicts (in their order in the text: parse with ordered_json, as Python keeps
// insertion order), arrays lists. Fails (InvalidArgument) for nesting deeper
// than `max_depth`.
Result<Value> value_from_json(const nlohmann::ordered_json& json, int max_depth);

}  // namespace staticlm::jinja
