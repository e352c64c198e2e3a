// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace staticlm {
namespace {

constexpr float kNegativeInfinity = -std::numeric_limits<float>::infinity();
// top-p sorts only as much of the vocabulary as it walks: first this many, then doubling.
constexpr int64_t kTopPFirstChunk = 256;
// OpenAI's logit_bias range; its lower end bans the token.
constexpr float kMinLogitBias = -100.0f;
constexpr float kMaxLogitBias = 100.0f;

bool is_finite(double value) {
  return std::isfinite(value);
}

}  // namespace

Status SamplingParams::validate() const {
  if (!is_finite(temperature) || temperature < 0.0) {
    return invalid_argument("sampling option 'temperature' must be finite and >= 0 (0 = greedy), found ", temperature);
  }
  if (top_k < 0) {
    return invalid_argument("sampling option 'top_k' must be >= 0 (0 = off), found ", top_k);
  }
  if (!(top_p > 0.0 && top_p <= 1.0)) {
    return invalid_argument("sampling option 'top_p' must be in (0, 1], found ", top_p);
  }
  if (!(min_p >= 0.0 && min_p < 1.0)) {
    return invalid_argument("sampling option 'min_p' must be in [0, 1), found ", min_p);
  }
  if (!is_finite(repetition_penalty) || repetition_penalty <= 0.0) {
    return invalid_argument("sampling option 'repetition_penalty' must be finite and > 0 (1 = off), found ",
                            repetition_penalty);
  }
  if (repetition_window < 0) {
    return invalid_argument("sampling option 'repetition_window' must be >= 0 (0 = whole history), found ",
                            repetition_window);
  }
  for (const auto& [name, value] : {std::pair<const char*, double>{"frequency_penalty", frequency_penalty},
                                    std::pair<const char*, double>{"presence_penalty", presence_penalty}}) {
    if (!(value >= -2.0 && value <= 2.0)) {
      return invalid_argument("sampling option '", name, "' must be in [-2, 2] (0 = off), found ", value);
    }
  }
  std::vector<int32_t> ids;
  ids.reserve(logit_bias.size());
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0) {
      return invalid_argument("sampling option 'logit_bias': token id ", id, " is negative");
    }
    if (!(bias >= kMinLogitBias && bias <= kMaxLogitBias)) {
      return invalid_argument("sampling option 'logit_bias': the bias of token ", id, " must be in [-100, 100], found ",
                              bias);
    }
    ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  if (auto repeated = std::adjacent_find(ids.begin(), ids.end()); repeated != ids.end()) {
    return invalid_argument("sampling option 'logit_bias': token ", *repeated, " is given twice");
  }
  return ok_status();
}

Sampler::Sampler(SamplingParams params, int64_t vocab_size)
    : params_(params),
      vocab_size_(vocab_size),
      rng_(params.seed),
      candidates_(static_cast<size_t>(vocab_size)),
      penalized_(static_cast<size_t>(vocab_size), 0) {}

Result<Sampler> Sampler::create(SamplingParams params, int64_t vocab_size) {
  STATICLM_RETURN_IF_ERROR(params.validate());
  if (vocab_size <= 0 || vocab_size > std::numeric_limits<int32_t>::max()) {
    return invalid_argument("sampler vocab_size must be in [1, ", std::numeric_limits<int32_t>::max(), "], found ",
                            vocab_size);
  }
  for (const auto& [id, bias] : params.logit_bias) {
    if (id >= vocab_size) {
      return invalid_argument("sampling option 'logit_bias': token id ", id, " is outside the vocabulary [0, ",
                              vocab_size, ")");
    }
  }
  return Sampler(params, vocab_size);
}

Result<int32_t> Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  STATICLM_RETURN_IF_ERROR(load_logits(logits, history));
  if (params_.temperature == 0.0) {
    return greedy_token();
  }
  return sample_token();
}

Status Sampler::load_logits(std::span<const float> logits, std::span<const int32_t> history) {
  if (static_cast<int64_t>(logits.size()) != vocab_size_) {
    return invalid_argument("logits: expected ", vocab_size_, " values (the vocabulary size), found ", logits.size());
  }
  bool all_masked = true;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float logit = logits[i];
    if (std::isnan(logit)) {
      return data_loss("logits contain NaN at index ", i);
    }
    all_masked = all_masked && logit == kNegativeInfinity;
    candidates_[i] = Candidate{logit, static_cast<int32_t>(i), 0.0};
  }
  if (all_masked) {
    return invalid_argument("logits: all ", vocab_size_, " values are -inf, no token can be sampled");
  }
  if (!params_.logit_bias.empty() && !apply_logit_bias()) {
    return invalid_argument("logit_bias bans every token the logits allow, no token can be sampled");
  }
  if (params_.repetition_penalty == 1.0 && params_.frequency_penalty == 0.0 && params_.presence_penalty == 0.0) {
    return ok_status();
  }

  size_t window_begin = 0;
  if (params_.repetition_window > 0 && history.size() > static_cast<size_t>(params_.repetition_window)) {
    window_begin = history.size() - static_cast<size_t>(params_.repetition_window);
  }
  const std::span<const int32_t> window = history.subspan(window_begin);
  for (size_t i = 0; i < window.size(); ++i) {
    if (window[i] < 0 || window[i] >= vocab_size_) {
      return invalid_argument("history token at index ", window_begin + i, " is ", window[i],
                              ", outside the vocabulary [0, ", vocab_size_, ")");
    }
  }
  apply_repetition_penalty(window);
  apply_count_penalties(window);
  return ok_status();
}

bool Sampler::apply_logit_bias() {
  for (const auto& [id, bias] : params_.logit_bias) {
    float& logit = candidates_[static_cast<size_t>(id)].logit;
    if (bias <= kMinLogitBias) {
      logit = kNegativeInfinity;
    } else if (std::isfinite(logit)) {  // a masked token stays masked (a grammar's mask)
      logit = std::clamp(logit + bias, std::numeric_limits<float>::lowest(), std::numeric_limits<float>::max());
    }
  }
  for (const Candidate& candidate : candidates_) {
    if (candidate.logit != kNegativeInfinity) {
      return true;
    }
  }
  return false;
}

void Sampler::apply_repetition_penalty(std::span<const int32_t> window) {
  const double penalty = params_.repetition_penalty;
  if (penalty == 1.0) {
    return;
  }
  for (const int32_t token : window) {
    if (penalized_[token] != 0) {
      continue;  // a token is penalized once however often it occurred (as in Hugging Face)
    }
    penalized_[token] = 1;
    float& logit = candidates_[token].logit;
    const double penalized = logit > 0.0f ? logit / penalty : logit * penalty;
    // A finite logit stays finite: an overflow to -inf would mask the token instead of penalizing it.
    logit = logit == kNegativeInfinity
                ? logit
                : static_cast<float>(std::max(penalized, static_cast<double>(std::numeric_limits<float>::lowest())));
  }
  for (const int32_t token : window) {
    penalized_[token] = 0;
  }
}

void Sampler::apply_count_penalties(std::span<const int32_t> window) {
  if (params_.frequency_penalty == 0.0 && params_.presence_penalty == 0.0) {
    return;
  }
  counted_.assign(window.begin(), window.end());
  std::sort(counted_.begin(), counted_.end());
  for (size_t begin = 0; begin < counted_.size();) {
    size_t end = begin;
    while (end < counted_.size() && counted_[end] == counted_[begin]) {
      ++end;
    }
    float& logit = candidates_[static_cast<size_t>(counted_[begin])].logit;
    const double lowered = static_cast<double>(logit) - params_.frequency_penalty * static_cast<double>(end - begin) -
                           params_.presence_penalty;
    // As above: a finite logit stays finite, -inf stays masked.
    logit = logit == kNegativeInfinity
                ? logit
                : static_cast<float>(std::clamp(lowered, static_cast<double>(std::numeric_limits<float>::lowest()),
                                                static_cast<double>(std::numeric_limits<float>::max())));
    begin = end;
  }
}

int32_t Sampler::greedy_token() const {
  // candidates_ is in token order here; strict '>' keeps the lowest index among equal maxima.
  size_t best = 0;
  for (size_t i = 1; i < candidates_.size(); ++i) {
    if (candidates_[i].logit > candidates_[best].logit) {
      best = i;
    }
  }
  return candidates_[best].id;
}

int32_t Sampler::sample_token() {
  // Masked tokens have probability 0 at every stage; dropping them first shrinks the sorts.
  int64_t count = 0;
  float max_logit = kNegativeInfinity;
  for (const Candidate& candidate : candidates_) {
    if (candidate.logit != kNegativeInfinity) {
      max_logit = std::max(max_logit, candidate.logit);
      candidates_[count++] = candidate;
    }
  }
  sorted_prefix_ = 0;

  if (params_.top_k > 0 && params_.top_k < count) {
    sort_prefix(params_.top_k, count);
    count = params_.top_k;
  }

  // softmax(l / T) == softmax((l - max) / T); subtracting first keeps every exponent <= 0.
  const bool max_is_infinite = std::isinf(max_logit);
  double total_weight = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    Candidate& candidate = candidates_[i];
    if (max_is_infinite) {
      candidate.weight = std::isinf(candidate.logit) ? 1.0 : 0.0;  // the +inf tokens share all the mass
    } else {
      candidate.weight =
          std::exp((static_cast<double>(candidate.logit) - static_cast<double>(max_logit)) / params_.temperature);
    }
    total_weight += candidate.weight;
  }

  if (params_.top_p < 1.0) {
    count = keep_top_p(count, total_weight);
  }
  if (params_.min_p > 0.0) {
    count = keep_min_p(count);
  }

  double survivor_weight = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    survivor_weight += candidates_[i].weight;
  }
  const double target = uniform_unit() * survivor_weight;
  double cumulative = 0.0;
  int64_t last_positive = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double weight = candidates_[i].weight;
    if (weight <= 0.0) {
      continue;
    }
    last_positive = i;
    cumulative += weight;
    if (cumulative > target) {
      return candidates_[i].id;
    }
  }
  return candidates_[last_positive].id;  // rounding left the target just past the last sum
}

void Sampler::sort_prefix(int64_t prefix, int64_t count) {
  if (prefix <= sorted_prefix_) {
    return;
  }
  // Higher logit first, lower id on ties: a total order, so every standard library agrees.
  const auto better = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  const auto begin = candidates_.begin();
  if (prefix < count) {
    std::nth_element(begin + sorted_prefix_, begin + prefix, begin + count, better);
  }
  std::sort(begin + sorted_prefix_, begin + prefix, better);
  sorted_prefix_ = prefix;
}

int64_t Sampler::keep_top_p(int64_t count, double total_weight) {
  const double target = params_.top_p * total_weight;
  double cumulative = 0.0;
  int64_t chunk = kTopPFirstChunk;
  for (int64_t i = 0; i < count; ++i) {
    if (i == sorted_prefix_) {
      sort_prefix(std::min(count, sorted_prefix_ + chunk), count);
      chunk *= 2;
    }
    cumulative += candidates_[i].weight;
    if (cumulative >= target) {
      return i + 1;
    }
  }
  return count;
}

int64_t Sampler::keep_min_p(int64_t count) {
  // p < min_p * p_max compares the same on unnormalized weights.
  double max_weight = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    max_weight = std::max(max_weight, candidates_[i].weight);
  }
  const double threshold = params_.min_p * max_weight;
  int64_t kept = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (candidates_[i].weight >= threshold) {
      candidates_[kept++] = candidates_[i];
    }
  }
  return kept;
}

double Sampler::uniform_unit() {
  // The top 53 bits of one draw, scaled into [0, 1): exact and identical on every platform.
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

void mask_logits(std::span<float> logits, std::span<const uint64_t> allowed) {
  const size_t covered = std::min(logits.size(), allowed.size() * 64);
  for (size_t word = 0; word * 64 < covered; ++word) {
    const uint64_t bits = allowed[word];
    const size_t begin = word * 64;
    const size_t end = std::min(covered, begin + 64);
    if (bits == ~uint64_t{0}) {
      continue;
    }
    if (bits == 0) {
      std::fill(logits.begin() + static_cast<std::ptrdiff_t>(begin), logits.begin() + static_cast<std::ptrdiff_t>(end),
                kNegativeInfinity);
      continue;
    }
    for (size_t i = begin; i < end; ++i) {
      if (((bits >> (i - begin)) & 1) == 0) {
        logits[i] = kNegativeInfinity;
      }
    }
  }
  std::fill(logits.begin() + static_cast<std::ptrdiff_t>(covered), logits.end(), kNegativeInfinity);
}

}  // namespace staticlm
