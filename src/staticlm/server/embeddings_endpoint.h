// SPDX-License-Identifier: Apache-2.0
// POST /v1/embeddings (OpenAI's shape, which llama-server also answers at /embeddings): the request
// parsed and checked before any session is taken, and the response built from the embeddings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/llm/tokenizer/tokenizer.h"
#include "staticlm/server/openai_json.h"

namespace staticlm::server {

// Inputs per request, as OpenAI's limit.
inline constexpr size_t kMaxEmbeddingInputs = 2048;

struct EmbeddingRequest {
  std::vector<std::vector<int32_t>> inputs;  // each input's tokens
  bool base64 = false;                       // encoding_format "base64": little-endian float32 bytes
};

struct EmbeddingLimits {
  int max_json_depth = 64;
  int64_t vocab_size = 0;
  int64_t context_length = 0;  // tokens an input may have
  int64_t hidden_size = 0;     // the only `dimensions` there is
};

// {"input": string | [string, ...] | [id, ...] | [[id, ...], ...], "model", "encoding_format":
// "float" | "base64", "dimensions", "user"}. A text is encoded with the tokenizer's special tokens,
// as a prompt is. InvalidArgument naming the field for anything else: an unknown field, an empty
// or too long input, a token id outside the vocabulary, `dimensions` other than the hidden size.
Result<EmbeddingRequest> parse_embedding_request(std::string_view body, const Tokenizer& tokenizer,
                                                 const EmbeddingLimits& limits);

// {"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage":
// {"prompt_tokens", "total_tokens"}}; each embedding a float array, or its bytes in base64.
Json embedding_response_json(const std::vector<std::vector<float>>& embeddings, bool base64, const std::string& model,
                             int64_t prompt_tokens);

}  // namespace staticlm::server
