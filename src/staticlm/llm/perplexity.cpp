// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/perplexity.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace staticlm {
namespace {

// -log softmax(row)[target], in double.
double negative_log_likelihood(std::span<const float> row, int32_t target) {
  double largest = -INFINITY;
  for (float v : row) {
    largest = std::max(largest, static_cast<double>(v));
  }
  double sum = 0.0;
  for (float v : row) {
    sum += std::exp(static_cast<double>(v) - largest);
  }
  return largest + std::log(sum) - static_cast<double>(row[static_cast<size_t>(target)]);
}

}  // namespace

Result<PerplexityResult> compute_perplexity(LlmSession& session, std::span<const int32_t> tokens,
                                            const PerplexityOptions& options) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (options.ctx < 2 || options.ctx > session.max_cache_len()) {
    return invalid_argument("perplexity: the window length 'ctx' must be in [2, ", session.max_cache_len(),
                            "] (the program's max_cache_len), found ", options.ctx);
  }
  if (options.stride < 1 || options.stride > options.ctx) {
    return invalid_argument("perplexity: the step 'stride' must be in [1, ", options.ctx,
                            "] (at most the window length), found ", options.stride);
  }
  if (n < 2) {
    return invalid_argument("perplexity: the text has ", n, " token", n == 1 ? "" : "s",
                            "; scoring needs at least two");
  }
  for (int32_t token : tokens) {
    if (token < 0 || token >= session.vocab_size()) {
      return invalid_argument("perplexity: token id ", token, " is outside the vocabulary [0, ", session.vocab_size(),
                              ")");
    }
  }
  // Window w starts at w * stride; the last one is the first that reaches the end.
  const int64_t windows = n <= options.ctx ? 1 : 1 + (n - options.ctx + options.stride - 1) / options.stride;
  PerplexityResult result;
  double sum = 0.0;
  double sum_squares = 0.0;
  int64_t scored_until = 1;  // tokens [0, scored_until) are scored, or never are (token 0)
  for (int64_t w = 0; w < windows; ++w) {
    const int64_t begin = w * options.stride;
    const int64_t end = std::min(n, begin + options.ctx);
    const std::span<const int32_t> window =
        tokens.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
    // Row i of the window predicts token begin + i + 1; it counts when that token is not scored yet.
    auto score = [&](int64_t row, std::span<const float> logits) {
      const int64_t target = begin + row + 1;
      if (target < scored_until || target >= end) {
        return;
      }
      const double nll = negative_log_likelihood(logits, tokens[static_cast<size_t>(target)]);
      sum += nll;
      sum_squares += nll * nll;
      ++result.scored_tokens;
    };
    session.reset();
    if (session.prefill_returns_all_logits()) {
      STATICLM_RETURN_IF_ERROR(session.prefill(window, score));
    } else {
      for (size_t i = 0; i < window.size(); ++i) {
        STATICLM_RETURN_IF_ERROR(session.decode(
            window[i], [&, i](int64_t, std::span<const float> logits) { score(static_cast<int64_t>(i), logits); }));
      }
    }
    scored_until = end;
    if (options.progress) {
      options.progress(w + 1, windows, std::exp(sum / static_cast<double>(std::max<int64_t>(1, result.scored_tokens))));
    }
  }
  const auto count = static_cast<double>(result.scored_tokens);
  result.windows = windows;
  result.mean_nll = sum / count;
  result.perplexity = std::exp(result.mean_nll);
  const double variance = std::max(0.0, sum_squares / count - result.mean_nll * result.mean_nll);
  result.standard_error = count > 1 ? result.perplexity * std::sqrt(variance / (count - 1)) : 0.0;
  return result;
}

}  // namespace staticlm
