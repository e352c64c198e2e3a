// SPDX-License-Identifier: Apache-2.0
#include "staticlm/tools/speculation_flags.h"

#include <utility>

namespace staticlm::cli {

void add_speculation_flags(CLI::App& app, SpeculationFlags& flags) {
  app.add_option("--draft", flags.draft,
                 "Speculative decoding with this draft program (.slm: a smaller model with the same tokenizer); the "
                 "output is the same");
  app.add_option("--lookup", flags.lookup,
                 "Speculative decoding by prompt lookup: guess the tokens that followed the last N tokens where they "
                 "occurred before (N = the longest n-gram matched, e.g. 3)");
  app.add_option("--draft-max", flags.draft_max, "The most tokens guessed per check (adapts down from it)")
      ->capture_default_str();
  app.add_option("--draft-p-min", flags.draft_p_min,
                 "--draft: stop guessing where the draft's best token is less likely than this")
      ->capture_default_str();
}

namespace {

constexpr std::pair<std::string_view, std::string_view> kSpeculationFlags[] = {
    {"lookup_ngram", "--lookup"}, {"draft_max", "--draft-max"}, {"draft_p_min", "--draft-p-min"}};

}  // namespace

SpeculationOptions speculation_options(const SpeculationFlags& flags) {
  SpeculationOptions options;
  options.lookup_ngram = flags.lookup;
  options.draft_max = flags.draft_max;
  options.draft_p_min = flags.draft_p_min;
  return options;
}

Status check_speculation_flags(const SpeculationFlags& flags) {
  if (!flags.draft.empty() && flags.lookup > 0) {
    return invalid_argument("give --draft or --lookup, not both");
  }
  return with_flag_names(check_speculation_options(speculation_options(flags)), kSpeculationFlags);
}

Result<Speculation> open_speculation(const SpeculationFlags& flags, const EngineArgs& target_args,
                                     const Engine& target) {
  STATICLM_RETURN_IF_ERROR(check_speculation_flags(flags));
  Speculation out;
  out.options = speculation_options(flags);
  if (flags.draft.empty()) {
    if (flags.lookup > 0) {
      STATICLM_RETURN_IF_ERROR(target.check_speculation().with_context("--lookup"));
    }
    return out;
  }
  EngineArgs draft_args = target_args;
  draft_args.path = flags.draft;
  auto draft = open_engine(draft_args, target.program()->shared_thread_pool());
  if (!draft.ok()) {
    return draft.status().with_context(str_cat("--draft '", flags.draft, "'"));
  }
  STATICLM_RETURN_IF_ERROR(target.check_draft(**draft).with_context(str_cat("--draft '", flags.draft, "'")));
  out.draft = std::move(draft).value();
  return out;
}

void print_speculation_stats(std::FILE* out, const SpeculationStats& stats, const SpeculationOptions& options) {
  if (!options.enabled()) {
    return;
  }
  const double rate = stats.drafted > 0 ? static_cast<double>(stats.accepted) / static_cast<double>(stats.drafted) : 0;
  std::fprintf(out, "speculation (%s): %lld tokens drafted, %lld accepted (%.0f%%), %lld checks\n",
               options.draft != nullptr ? "draft program" : "prompt lookup", static_cast<long long>(stats.drafted),
               static_cast<long long>(stats.accepted), 100.0 * rate, static_cast<long long>(stats.checks));
  if (!stats.proposer_error.empty()) {
    std::fprintf(out, "speculation stopped partway, the rest decoded plainly: %s\n", stats.proposer_error.c_str());
  }
}

}  // namespace staticlm::cli
