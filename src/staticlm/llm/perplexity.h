// SPDX-License-Identifier: Apache-2.0
// Perplexity of a token sequence under a program, the way llama.cpp's perplexity tool and
// Hugging Face's sliding-window recipe measure it: windows of `ctx` tokens starting at 0, stride,
// 2 x stride, ..., each fed from position 0 of an empty cache, each scoring only the tokens no
// earlier window scored (the first window: every token after its first), so every scored token
// but the first window's has at least ctx - stride tokens of context. The negative
// log-likelihoods are summed in double; perplexity = exp(mean), and its standard error follows
// from theirs (delta method), as llama.cpp reports it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "staticlm/core/result.h"
#include "staticlm/llm/contract.h"

namespace staticlm {

struct PerplexityOptions {
  int64_t ctx = 0;     // tokens per window; at most the session's max_cache_len
  int64_t stride = 0;  // in [1, ctx]
  // After each window: windows done, windows in all, perplexity of what is scored so far.
  std::function<void(int64_t done, int64_t windows, double perplexity)> progress;
};

struct PerplexityResult {
  double perplexity = 0.0;
  double standard_error = 0.0;  // of the perplexity
  double mean_nll = 0.0;        // nats per scored token
  int64_t scored_tokens = 0;
  int64_t windows = 0;
};

// Feeds windows of `tokens` through `session` (reset before each) and scores them. A session
// whose prefill returns every position's logits is fed a window at a time; one returning only the
// last position's (exported with --logits last) a token at a time through decode, slower.
// InvalidArgument for a ctx outside [2, max_cache_len], a stride outside [1, ctx], fewer than two
// tokens, or a token outside the vocabulary; the session's errors otherwise.
Result<PerplexityResult> compute_perplexity(LlmSession& session, std::span<const int32_t> tokens,
                                            const PerplexityOptions& options);

}  // namespace staticlm
