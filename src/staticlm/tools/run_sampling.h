// SPDX-License-Identifier: Apache-2.0
// The sampling flags of `run` and `run --chat` (llama.cpp's names). A flag the user gives
// overrides its parameter; the others come from the program's generation_config, as in
// transformers' generate() (Engine::choose_sampling).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "staticlm/core/result.h"
#include "staticlm/llm/engine.h"

namespace staticlm::cli {

struct SamplingFlags {
  double temperature = 0.0;
  int64_t top_k = 0;
  double top_p = 1.0;
  double min_p = 0.0;
  double repetition_penalty = 1.0;
  std::string seed = "-1";              // parsed here, as uint64_t's whole range or -1 (a random seed)
  std::vector<std::string> logit_bias;  // llama.cpp's TOKEN_ID(+|-)BIAS, parsed here
  // Set by add_sampling_flags; count() says whether the user gave the flag.
  CLI::Option* temperature_option = nullptr;
  CLI::Option* top_k_option = nullptr;
  CLI::Option* top_p_option = nullptr;
  CLI::Option* min_p_option = nullptr;
  CLI::Option* repetition_penalty_option = nullptr;
  CLI::Option* seed_option = nullptr;
  CLI::Option* logit_bias_option = nullptr;
};

void add_sampling_flags(CLI::App& app, SamplingFlags& flags);

// The program's sampling with the given flags in place. Fails with InvalidArgument naming the
// flag: a --seed that is not -1 or an integer in [0, 2^64), a --logit-bias that is not
// TOKEN_ID+BIAS or TOKEN_ID-BIAS (-inf bans), a value out of range, a bad value in
// the program's generation_config (which the flag overrides). Prints a note on stderr for a filter flag that greedy
// decoding ignores.
Result<SamplingParams> choose_sampling(const Engine& engine, const SamplingFlags& flags);

// The statistics lines saying what was chosen: "sampling: temp 0.7, top-k 40 (the program's
// generation_config; --temp given)", and for a sampled run "seed: N" (what --seed repeats).
void print_sampling(std::FILE* out, const SamplingParams& params, const SamplingFlags& flags);

}  // namespace staticlm::cli
