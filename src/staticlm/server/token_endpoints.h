// SPDX-License-Identifier: Apache-2.0
// POST /tokenize and POST /detokenize (llama-server's shapes): request body in, response JSON out,
// InvalidArgument naming the field for anything malformed.
#pragma once

#include <string_view>

#include "staticlm/core/result.h"
#include "staticlm/llm/tokenizer/tokenizer.h"
#include "staticlm/server/openai_json.h"

namespace staticlm::server {

// {"content": string, "add_special": bool = false, "with_pieces": bool = false} ->
// {"tokens": [id, ...]} or, with pieces, {"tokens": [{"id", "piece"}, ...]}.
Result<Json> tokenize_request(std::string_view body, const Tokenizer& tokenizer, int max_json_depth);
// {"tokens": [id, ...]} -> {"content": string}, special tokens included.
Result<Json> detokenize_request(std::string_view body, const Tokenizer& tokenizer, int max_json_depth);

}  // namespace staticlm::server
