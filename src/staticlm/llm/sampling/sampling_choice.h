// SPDX-License-Identifier: Apache-2.0
// How a generation's sampling is chosen, as transformers' generate() chooses it: the program's
// generation_config gives every parameter, and each one the caller set (a CLI flag, a request
// field, a Python argument) overrides its own. Without a seed, a sampled generation draws a fresh
// one, as llama.cpp does, and reports it so that the run can be repeated.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/llm/sampling/sampler.h"

namespace staticlm {

// The sampling parameters a caller set; an empty field takes the default.
struct SamplingOverrides {
  std::optional<double> temperature;
  std::optional<int64_t> top_k;
  std::optional<double> top_p;
  std::optional<double> min_p;
  std::optional<double> repetition_penalty;
  std::optional<double> frequency_penalty;
  std::optional<double> presence_penalty;
  std::optional<int64_t> repetition_window;  // 0: the whole history
  std::optional<uint64_t> seed;              // empty: random_seed()
  std::optional<std::vector<std::pair<int32_t, float>>> logit_bias;

  bool empty() const;
};

// `defaults` with each field of `given` that is set in its place, and the seed `given` sets or a
// random one. Fails with InvalidArgument naming the parameter (SamplingParams::validate's
// messages) for a bad value in `given`, and for a bad value in `defaults`, starting with
// "the program's generation_config: " (a caller can override that parameter).
Result<SamplingParams> resolve_sampling(const SamplingParams& defaults, const SamplingOverrides& given);

// 63 bits from std::random_device (a seed any front end takes back as a non-negative integer).
uint64_t random_seed();

// "greedy", or "temp 0.7, top-k 40, top-p 0.9", naming only the filters and penalties that are on
// (with llama.cpp's flag names).
std::string describe_sampling(const SamplingParams& params);

}  // namespace staticlm
