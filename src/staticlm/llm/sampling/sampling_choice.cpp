// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/sampling/sampling_choice.h"

#include <random>

#include "staticlm/core/str_cat.h"

namespace staticlm {
namespace {

SamplingParams with_overrides(SamplingParams params, const SamplingOverrides& given) {
  params.temperature = given.temperature.value_or(params.temperature);
  params.top_k = given.top_k.value_or(params.top_k);
  params.top_p = given.top_p.value_or(params.top_p);
  params.min_p = given.min_p.value_or(params.min_p);
  params.repetition_penalty = given.repetition_penalty.value_or(params.repetition_penalty);
  params.frequency_penalty = given.frequency_penalty.value_or(params.frequency_penalty);
  params.presence_penalty = given.presence_penalty.value_or(params.presence_penalty);
  params.repetition_window = given.repetition_window.value_or(params.repetition_window);
  if (given.logit_bias) {
    params.logit_bias = *given.logit_bias;
  }
  return params;
}

}  // namespace

bool SamplingOverrides::empty() const {
  return !temperature && !top_k && !top_p && !min_p && !repetition_penalty && !frequency_penalty && !presence_penalty &&
         !seed && !logit_bias && !repetition_window;
}

Result<SamplingParams> resolve_sampling(const SamplingParams& defaults, const SamplingOverrides& given) {
  // Checked over neutral values first, so that a bad given value is reported as the caller's.
  STATICLM_RETURN_IF_ERROR(with_overrides(SamplingParams(), given).validate());
  SamplingParams params = with_overrides(defaults, given);
  if (Status valid = params.validate(); !valid.ok()) {
    return invalid_argument("the program's generation_config: ", valid.message());
  }
  params.seed = given.seed ? *given.seed : random_seed();
  return params;
}

uint64_t random_seed() {
  std::random_device device;
  // 63 bits: a seed printed for the user must go back in as a non-negative signed integer
  // (--seed, a request's seed).
  return ((static_cast<uint64_t>(device()) << 32) | device()) >> 1;
}

std::string describe_sampling(const SamplingParams& params) {
  std::string text = params.temperature == 0.0 ? "greedy" : str_cat("temp ", params.temperature);
  if (params.temperature != 0.0) {
    if (params.top_k > 0) {
      text += str_cat(", top-k ", params.top_k);
    }
    if (params.top_p < 1.0) {
      text += str_cat(", top-p ", params.top_p);
    }
    if (params.min_p > 0.0) {
      text += str_cat(", min-p ", params.min_p);
    }
  }
  // The penalties change greedy decoding too.
  if (params.repetition_penalty != 1.0) {
    text += str_cat(", repeat-penalty ", params.repetition_penalty);
  }
  if (params.frequency_penalty != 0.0) {
    text += str_cat(", frequency-penalty ", params.frequency_penalty);
  }
  if (params.presence_penalty != 0.0) {
    text += str_cat(", presence-penalty ", params.presence_penalty);
  }
  if (!params.logit_bias.empty()) {
    text += str_cat(", logit-bias on ", params.logit_bias.size(), params.logit_bias.size() == 1 ? " token" : " tokens");
  }
  return text;
}

}  // namespace staticlm
