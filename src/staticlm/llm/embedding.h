// SPDX-License-Identifier: Apache-2.0
// Text embeddings from a program's embeddings method (docs/embeddings.md): the final-normed
// hidden state of every token, pooled into one vector (their mean, or the last token's, as
// llama.cpp's --pooling mean|last) or kept per token (none), L2-normalised on request. Every front
// end (staticlm embed, the server's /v1/embeddings, Python) embeds through here.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/llm/contract.h"

namespace staticlm {

enum class Pooling { kMean, kLast, kNone };

std::string_view pooling_name(Pooling pooling);
// "mean", "last" or "none"; InvalidArgument naming what was found otherwise.
Result<Pooling> parse_pooling(std::string_view name);

struct EmbeddingOptions {
  std::optional<Pooling> pooling;  // empty: the one the program suggests (metadata embedding_pooling)
  bool normalize = false;          // divide each vector by its L2 norm
};

// The embedding of `tokens`, embedded from an empty cache: hidden_size() floats, or with
// Pooling::kNone every token's, row after row. The session's cache holds `tokens` afterwards (what
// a prefill of them would leave). Refused before the cache is touched: FailedPrecondition when the
// program has no embeddings method; InvalidArgument for no tokens or one outside the vocabulary;
// OutOfRange for more tokens than the cache holds. DataLoss when the program computes a value that
// is not finite.
Result<std::vector<float>> embed_tokens(LlmSession& session, std::span<const int32_t> tokens,
                                        const EmbeddingOptions& options);

}  // namespace staticlm
