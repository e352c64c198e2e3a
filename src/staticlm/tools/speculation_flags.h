// SPDX-License-Identifier: Apache-2.0
// The speculative decoding flags `run`, `serve` and `bench` share (--draft, --lookup, --draft-max,
// --draft-p-min; docs/speculative_decoding.md), and the draft program they open.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "staticlm/core/result.h"
#include "staticlm/llm/engine.h"
#include "staticlm/tools/engine_flags.h"

namespace staticlm::cli {

struct SpeculationFlags {
  std::string draft;  // a draft program (.slm) with the target's tokenizer
  int lookup = 0;     // prompt lookup: the longest n-gram matched
  int draft_max = 8;
  float draft_p_min = 0.0f;
};

void add_speculation_flags(CLI::App& app, SpeculationFlags& flags);

// What the flags ask for: the draft program's engine (null with --lookup or neither), opened with
// the target's engine flags on the target's threads, and the options without a draft session
// (each generating session opens its own from `draft`).
struct Speculation {
  std::unique_ptr<Engine> draft;
  SpeculationOptions options;
};
// The options the flags set (no draft session: each generating session opens its own).
SpeculationOptions speculation_options(const SpeculationFlags& flags);

// InvalidArgument naming the flag: a value out of range, or both --draft and --lookup.
Status check_speculation_flags(const SpeculationFlags& flags);

// Fails naming the flag: a bad value, both --draft and --lookup, a draft that cannot be opened or
// whose tokenizer differs from the target's, a target that keeps only the last logits.
Result<Speculation> open_speculation(const SpeculationFlags& flags, const EngineArgs& target_args,
                                     const Engine& target);

// One line: tokens drafted and kept, the acceptance rate, and the checks run. Nothing when off.
void print_speculation_stats(std::FILE* out, const SpeculationStats& stats, const SpeculationOptions& options);

}  // namespace staticlm::cli
