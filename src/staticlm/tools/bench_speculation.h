// SPDX-License-Identifier: Apache-2.0
// `staticlm bench MODEL --lookup N | --draft DRAFT.slm -f PROMPT.txt`: decode with and without
// speculation on one prompt, alternated run by run, the greedy tokens compared every run.
#pragma once

#include <string>

#include "staticlm/core/result.h"
#include "staticlm/tools/engine_flags.h"
#include "staticlm/tools/speculation_flags.h"

namespace staticlm::cli {

struct SpeculationBenchArgs {
  EngineArgs model;
  SpeculationFlags speculation;
  std::string prompt_file;
  int64_t decode_tokens = 64;
  int repetitions = 5;
  double temperature = 0.0;  // sampled runs draw with the same seed both ways
  uint64_t seed = 1;
  bool json_output = false;
};

Status run_speculation_bench(const SpeculationBenchArgs& args);

}  // namespace staticlm::cli
