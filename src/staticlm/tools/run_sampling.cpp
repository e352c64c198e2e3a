// SPDX-License-Identifier: Apache-2.0
#include "staticlm/tools/run_sampling.h"

#include <charconv>
#include <limits>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "staticlm/tools/run_args.h"

namespace staticlm::cli {
namespace {

bool given(const CLI::Option* option) {
  return option != nullptr && option->count() > 0;
}

// The flags the user gave, as written on the command line.
std::vector<std::string> given_flags(const SamplingFlags& flags) {
  const std::pair<const CLI::Option*, std::string_view> options[] = {
      {flags.temperature_option, "--temp"},
      {flags.top_k_option, "--top-k"},
      {flags.top_p_option, "--top-p"},
      {flags.min_p_option, "--min-p"},
      {flags.repetition_penalty_option, "--repeat-penalty"},
      {flags.seed_option, "--seed"},
      {flags.logit_bias_option, "--logit-bias"}};
  std::vector<std::string> names;
  for (const auto& [option, name] : options) {
    if (given(option)) {
      names.emplace_back(name);
    }
  }
  return names;
}

// -1 (or nothing given): a random seed.
Result<std::optional<uint64_t>> parse_seed(const std::string& text) {
  if (text == "-1") {
    return std::optional<uint64_t>();
  }
  uint64_t seed = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, seed);
  if (text.empty() || error != std::errc() || stop != end) {
    return invalid_argument("--seed: expected an integer in [0, ", std::numeric_limits<uint64_t>::max(),
                            "], or -1 for a random one; found '", text, "'");
  }
  return std::optional<uint64_t>(seed);
}

// llama.cpp's TOKEN_ID(+|-)BIAS: "15043+1", "15043-0.5", "15043-inf" (a ban, as -100 is).
Result<std::vector<std::pair<int32_t, float>>> parse_logit_biases(const std::vector<std::string>& given) {
  std::vector<std::pair<int32_t, float>> biases;
  for (const std::string& text : given) {
    const size_t sign = text.find_first_of("+-", 1);
    int32_t id = -1;
    const char* id_end = text.data() + (sign == std::string::npos ? text.size() : sign);
    const auto [stop, error] = std::from_chars(text.data(), id_end, id);
    const std::string bias_text = sign == std::string::npos ? "" : text.substr(sign);
    float bias = 0.0f;
    bool parsed = sign != std::string::npos && error == std::errc() && stop == id_end && id >= 0;
    if (parsed && bias_text == "-inf") {
      bias = -100.0f;
    } else if (parsed) {
      const char* first = bias_text.data() + (bias_text[0] == '+' ? 1 : 0);
      const char* last = bias_text.data() + bias_text.size();
      const auto [bias_stop, bias_error] = std::from_chars(first, last, bias);
      parsed = bias_error == std::errc() && bias_stop == last && first != last;
    }
    if (!parsed) {
      return invalid_argument(
          "--logit-bias: expected TOKEN_ID+BIAS or TOKEN_ID-BIAS (e.g. 15043+1, 15043-inf), found '", text, "'");
    }
    biases.emplace_back(id, bias);
  }
  return biases;
}

}  // namespace

void add_sampling_flags(CLI::App& app, SamplingFlags& flags) {
  constexpr std::string_view kDefault = " (default: the program's generation_config)";
  flags.temperature_option =
      app.add_option("--temp", flags.temperature, str_cat("Sampling temperature, 0 = greedy", kDefault));
  flags.top_k_option =
      app.add_option("--top-k", flags.top_k, str_cat("Keep the k most likely tokens, 0 = off", kDefault));
  flags.top_p_option = app.add_option("--top-p", flags.top_p, str_cat("Nucleus sampling threshold", kDefault));
  flags.min_p_option =
      app.add_option("--min-p", flags.min_p, str_cat("Drop tokens below min_p x the top probability", kDefault));
  flags.repetition_penalty_option =
      app.add_option("--repeat-penalty", flags.repetition_penalty, str_cat("Repetition penalty, 1 = off", kDefault));
  flags.seed_option =
      app.add_option("--seed", flags.seed, "Random seed; -1 (the default): a random one, printed")->type_name("INT");
  flags.logit_bias_option =
      app.add_option("-l,--logit-bias", flags.logit_bias,
                     "Add BIAS to a token's logit, TOKEN_ID+BIAS or TOKEN_ID-BIAS; -inf or -100 bans it (repeatable)")
          ->expected(1)
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

Result<SamplingParams> choose_sampling(const Engine& engine, const SamplingFlags& flags) {
  SamplingOverrides overrides;
  STATICLM_ASSIGN_OR_RETURN(overrides.seed, parse_seed(flags.seed));
  if (given(flags.temperature_option)) overrides.temperature = flags.temperature;
  if (given(flags.top_k_option)) overrides.top_k = flags.top_k;
  if (given(flags.top_p_option)) overrides.top_p = flags.top_p;
  if (given(flags.min_p_option)) overrides.min_p = flags.min_p;
  if (given(flags.repetition_penalty_option)) overrides.repetition_penalty = flags.repetition_penalty;
  if (given(flags.logit_bias_option)) {
    STATICLM_ASSIGN_OR_RETURN(overrides.logit_bias, parse_logit_biases(flags.logit_bias));
  }
  auto params = engine.choose_sampling(overrides);
  if (!params.ok()) {
    return with_flag_names(params.status(), kRunFlags);
  }
  if (params->temperature == 0.0) {
    for (const CLI::Option* filter : {flags.top_k_option, flags.top_p_option, flags.min_p_option}) {
      if (given(filter)) {
        std::fprintf(stderr, "note: greedy decoding ignores %s; give --temp to sample\n", filter->get_name().c_str());
      }
    }
  }
  return params;
}

void print_sampling(std::FILE* out, const SamplingParams& params, const SamplingFlags& flags) {
  const std::vector<std::string> names = given_flags(flags);
  std::string origin = "the program's generation_config";
  if (!names.empty()) {
    origin += str_cat("; ", join(names, ", "), " given");
  }
  std::fprintf(out, "sampling: %s (%s)\n", describe_sampling(params).c_str(), origin.c_str());
  if (params.temperature != 0.0) {
    std::fprintf(out, "seed: %llu\n", static_cast<unsigned long long>(params.seed));
  }
}

}  // namespace staticlm::cli
