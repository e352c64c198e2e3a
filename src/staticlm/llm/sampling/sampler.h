// SPDX-License-Identifier: Apache-2.0
// Sampler: picks the next token from one step's logits. The pipeline follows Hugging Face's
// logits processors (and llama.cpp's samplers of the same names):
//   0. logit bias (OpenAI's logit_bias): a token's bias is added to its logit; -100 bans it;
//   1. repetition penalty over the distinct tokens of the history window
//      (logit > 0 ? logit / penalty : logit * penalty);
//   2. temperature == 0: argmax, lowest index on ties, no random draw; otherwise
//   3. temperature scaling, 4. top-k, 5. top-p, 6. min-p,
//   7. softmax over the survivors and one draw from a seeded std::mt19937_64.
// The draw is implemented here (not with std::discrete_distribution), so a seed gives the same
// tokens with every standard library. A Sampler owns its scratch buffers, sized once for the
// vocabulary: sample() does not allocate. Not thread-safe; use one Sampler per sequence.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/core/status.h"

namespace staticlm {

struct SamplingParams {
  double temperature = 0.0;         // 0 = greedy
  int64_t top_k = 0;                // keep the k most likely tokens; 0 = off
  double top_p = 1.0;               // keep the smallest set with cumulative probability >= top_p
  double min_p = 0.0;               // drop tokens with p < min_p * p_max; 0 = off
  double repetition_penalty = 1.0;  // 1 = off
  int64_t repetition_window = 64;   // last N history tokens are penalized; 0 = the whole history
  // OpenAI's penalties over the same window: a token's logit loses frequency_penalty times its
  // count there, and presence_penalty once if it occurs at all. 0 = off.
  double frequency_penalty = 0.0;
  double presence_penalty = 0.0;
  uint64_t seed = 0;
  // (token id, bias) pairs, ids distinct: the bias is added to the token's logit before anything
  // else, in greedy decoding too; a bias of -100 bans the token (as OpenAI's logit_bias does).
  std::vector<std::pair<int32_t, float>> logit_bias = {};

  // InvalidArgument naming the field when temperature is negative or not finite, top_k < 0,
  // top_p outside (0, 1], min_p outside [0, 1), repetition_penalty <= 0 (or not finite),
  // repetition_window < 0, a frequency / presence penalty outside [-2, 2], or a logit bias whose
  // token id is negative or repeated or whose bias is outside [-100, 100].
  Status validate() const;
};

class Sampler {
 public:
  // Fails with InvalidArgument for invalid params (see validate()), a vocab_size that is not in
  // [1, INT32_MAX], or a logit bias for a token id outside the vocabulary.
  static Result<Sampler> create(SamplingParams params, int64_t vocab_size);

  // Returns the next token id. `logits` holds one score per vocabulary entry; -inf masks a
  // token. `history` is every token of the sequence so far; it is read only when the
  // repetition penalty is on. Fails with InvalidArgument when logits.size() != vocab_size,
  // every logit is -inf, or a history token inside the window lies outside [0, vocab_size); with
  // DataLoss when a logit is NaN ("logits contain NaN at index i": damaged weights or a kernel
  // bug, never the caller's input). A non-greedy call advances the random
  // generator by exactly one 64-bit draw; a failed call does not advance it.
  Result<int32_t> sample(std::span<const float> logits, std::span<const int32_t> history);

  // Restarts the random sequence as if the Sampler had been created with `seed`.
  void reset(uint64_t seed) { rng_.seed(seed); }

  const SamplingParams& params() const { return params_; }
  int64_t vocab_size() const { return vocab_size_; }

 private:
  struct Candidate {
    float logit;
    int32_t id;
    double weight;  // exp((logit - max_logit) / temperature), unnormalized probability
  };

  Sampler(SamplingParams params, int64_t vocab_size);

  Status load_logits(std::span<const float> logits, std::span<const int32_t> history);
  bool apply_logit_bias();  // true when a token is left unmasked
  void apply_repetition_penalty(std::span<const int32_t> window);
  void apply_count_penalties(std::span<const int32_t> window);
  int32_t greedy_token() const;
  int32_t sample_token();
  void sort_prefix(int64_t prefix, int64_t count);
  int64_t keep_top_p(int64_t count, double total_weight);
  int64_t keep_min_p(int64_t count);
  double uniform_unit();

  SamplingParams params_;
  int64_t vocab_size_ = 0;
  std::mt19937_64 rng_;
  std::vector<Candidate> candidates_;  // vocab_size_ entries; in token order after load_logits
  std::vector<uint8_t> penalized_;     // per token: already penalized during this call
  std::vector<int32_t> counted_;       // the window, sorted, to count occurrences
  int64_t sorted_prefix_ = 0;          // candidates_[0, sorted_prefix_) are the best, in order
};

// Sets logits[i] to -inf for every token i whose bit in `allowed` (bit i % 64 of word i / 64) is
// clear, ids past the mask's words included: a grammar's token mask (llm/grammar), applied before
// any sampling mode so that greedy and sampled decoding alike pick only allowed tokens.
void mask_logits(std::span<float> logits, std::span<const uint64_t> allowed);

}  // namespace staticlm
