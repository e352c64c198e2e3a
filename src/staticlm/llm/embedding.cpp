// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/embedding.h"

#include <cmath>

#include "staticlm/contracts/hf_static_v1_spec.h"

namespace staticlm {

std::string_view pooling_name(Pooling pooling) {
  return pooling == Pooling::kMean ? hf_static_v1::kPoolingMean : hf_static_v1::kPoolingLast;
}

Result<Pooling> parse_pooling(std::string_view name) {
  if (name == hf_static_v1::kPoolingMean) {
    return Pooling::kMean;
  }
  if (name == hf_static_v1::kPoolingLast) {
    return Pooling::kLast;
  }
  return invalid_argument("expected the pooling mean or last, found '", name, "'");
}

Result<std::vector<float>> embed_tokens(LlmSession& session, std::span<const int32_t> tokens,
                                        const EmbeddingOptions& options) {
  if (tokens.empty()) {
    return invalid_argument("nothing to embed: the input has no tokens");
  }
  if (session.embedding_pooling().empty()) {
    return session.embed(tokens, {});  // the session's FailedPrecondition
  }
  Pooling pooling = Pooling::kMean;
  if (options.pooling) {
    pooling = *options.pooling;
  } else {
    STATICLM_ASSIGN_OR_RETURN(pooling, parse_pooling(session.embedding_pooling()));
  }
  const auto width = static_cast<size_t>(session.hidden_size());
  const auto count = static_cast<int64_t>(tokens.size());
  // Summed in double: a mean over thousands of rows keeps float's precision.
  std::vector<double> sum(width, 0.0);
  session.reset();
  STATICLM_RETURN_IF_ERROR(session.embed(tokens, [&](int64_t index, std::span<const float> hidden) {
    if (pooling == Pooling::kMean || index == count - 1) {
      for (size_t i = 0; i < width; ++i) {
        sum[i] += hidden[i];
      }
    }
  }));
  const double divisor = pooling == Pooling::kMean ? static_cast<double>(count) : 1.0;
  double squares = 0.0;
  for (double& value : sum) {
    value /= divisor;
    squares += value * value;
  }
  // A zero vector has no direction to keep: it stays zero, as torch's F.normalize leaves it.
  const double scale = options.normalize && squares > 0.0 ? 1.0 / std::sqrt(squares) : 1.0;
  std::vector<float> out(width);
  for (size_t i = 0; i < width; ++i) {
    out[i] = static_cast<float>(sum[i] * scale);
  }
  return out;
}

}  // namespace staticlm
