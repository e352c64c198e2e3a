// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/embedding.h"

#include <cmath>

#include "staticlm/contracts/hf_static_v1_spec.h"

namespace staticlm {
namespace {

// Divides `v` by its L2 norm; a zero vector has no direction to keep and stays zero, as torch's
// F.normalize leaves it.
void normalize(std::span<double> v) {
  double squares = 0.0;
  for (double x : v) {
    squares += x * x;
  }
  if (squares > 0.0) {
    const double inverse = 1.0 / std::sqrt(squares);
    for (double& x : v) {
      x *= inverse;
    }
  }
}

}  // namespace

std::string_view pooling_name(Pooling pooling) {
  switch (pooling) {
    case Pooling::kMean: return hf_static_v1::kPoolingMean;
    case Pooling::kLast: return hf_static_v1::kPoolingLast;
    case Pooling::kNone: break;
  }
  return "none";
}

Result<Pooling> parse_pooling(std::string_view name) {
  for (Pooling pooling : {Pooling::kMean, Pooling::kLast, Pooling::kNone}) {
    if (name == pooling_name(pooling)) {
      return pooling;
    }
  }
  return invalid_argument("expected the pooling mean, last or none, found '", name, "'");
}

Result<std::vector<float>> embed_tokens(LlmSession& session, std::span<const int32_t> tokens,
                                        const EmbeddingOptions& options) {
  if (session.embedding_pooling().empty()) {
    return session.embed(tokens, {});  // the session's FailedPrecondition
  }
  if (tokens.empty()) {
    return invalid_argument("nothing to embed: the input has no tokens");
  }
  const auto count = static_cast<int64_t>(tokens.size());
  if (count > session.max_cache_len()) {
    return out_of_range("embedding ", count, " tokens would exceed the cache length ", session.max_cache_len());
  }
  for (int32_t token : tokens) {
    if (token < 0 || token >= session.vocab_size()) {
      return invalid_argument("token id ", token, " is outside the vocabulary [0, ", session.vocab_size(), ")");
    }
  }
  Pooling pooling = Pooling::kMean;
  if (options.pooling) {
    pooling = *options.pooling;
  } else {
    STATICLM_ASSIGN_OR_RETURN(pooling, parse_pooling(session.embedding_pooling()));
  }
  const auto width = static_cast<size_t>(session.hidden_size());
  const size_t rows = pooling == Pooling::kNone ? tokens.size() : 1;
  // Summed in double: a mean over thousands of rows keeps float's precision.
  std::vector<double> sum(rows * width, 0.0);
  session.reset();
  STATICLM_RETURN_IF_ERROR(session.embed(tokens, [&](int64_t index, std::span<const float> hidden) {
    if (pooling == Pooling::kLast && index != count - 1) {
      return;
    }
    double* out = sum.data() + (pooling == Pooling::kNone ? static_cast<size_t>(index) * width : 0);
    for (size_t i = 0; i < width; ++i) {
      out[i] += hidden[i];
    }
  }));
  for (size_t row = 0; row < rows; ++row) {
    std::span<double> vector(sum.data() + row * width, width);
    for (double& value : vector) {
      value /= pooling == Pooling::kMean ? static_cast<double>(count) : 1.0;
      if (!std::isfinite(value)) {
        return data_loss("the program computed a hidden state that is not finite (", value,
                         "): the embedding is undefined");
      }
    }
    if (options.normalize) {
      normalize(vector);
    }
  }
  std::vector<float> out(sum.size());
  for (size_t i = 0; i < sum.size(); ++i) {
    out[i] = static_cast<float>(sum[i]);
  }
  return out;
}

}  // namespace staticlm
