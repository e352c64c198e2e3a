// SPDX-License-Identifier: Apache-2.0
// Text embeddings from a program's embeddings method (docs/embeddings.md): the final-normed
// hidden state of every token, pooled into one vector (their mean, or the last token's, as
// llama.cpp's --pooling mean|last), L2-normalised on request. Every front end (staticlm embed, the
// server's /v1/embeddings, Python) embeds through here.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/llm/contract.h"

namespace staticlm {

enum class Pooling { kMean, kLast };

std::string_view pooling_name(Pooling pooling);
// "mean" or "last"; InvalidArgument naming what was found otherwise.
Result<Pooling> parse_pooling(std::string_view name);

struct EmbeddingOptions {
  std::optional<Pooling> pooling;  // empty: the one the program suggests (metadata embedding_pooling)
  bool normalize = false;          // divide by the vector's L2 norm
};

// The pooled embedding of `tokens`, embedded from an empty cache: the session's cache is reset
// first and holds `tokens` afterwards (what a prefill of them would leave). FailedPrecondition
// when the program has no embeddings method; InvalidArgument for no tokens; OutOfRange, before any
// work, for more tokens than the cache holds.
Result<std::vector<float>> embed_tokens(LlmSession& session, std::span<const int32_t> tokens,
                                        const EmbeddingOptions& options);

}  // namespace staticlm
