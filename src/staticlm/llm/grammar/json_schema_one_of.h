// SPDX-License-Identifier: Apache-2.0
// Whether a JSON Schema oneOf can be compiled exactly: a grammar takes a text that any of its
// alternatives matches, so "exactly one" holds only where no value can match two of them. That is
// shown from their types, their const / enum values, or the const / enum values of a property both
// require; where it cannot be shown the compiler refuses the oneOf. Part of
// json_schema_grammar.cpp's compiler.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "staticlm/core/result.h"

namespace staticlm::json_schema {

struct SchemaLookup {
  // `schema` with its chain of local references followed; null where one does not resolve.
  std::function<const nlohmann::ordered_json*(const nlohmann::ordered_json& schema)> resolve;
  // The types a schema names, or those its keywords imply.
  std::function<Result<std::vector<std::string>>(const nlohmann::ordered_json& schema)> types;
};

// Ok when no value can match two of `alternatives` (an array of schemas); else InvalidArgument
// naming the first pair that may ("alternatives 0 and 1 may both match one value, ..."), or saying
// there are too many to check within a bounded amount of work.
Status check_one_of_exclusive(const nlohmann::ordered_json& alternatives, const SchemaLookup& lookup);

}  // namespace staticlm::json_schema
