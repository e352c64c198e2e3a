// SPDX-License-Identifier: Apache-2.0
#include "staticlm/tools/bench_speculation.h"

#include <cmath>
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "staticlm/tools/bench_sample.h"
#include "staticlm/tools/input_files.h"

namespace staticlm::cli {
namespace {

using json = nlohmann::json;

constexpr uint64_t kMaxPromptFileBytes = 64 << 20;

double decode_rate(const GenerationResult& result) {
  return result.decode_seconds > 0 ? static_cast<double>(result.decode_steps) / result.decode_seconds : 0.0;
}

}  // namespace

Status run_speculation_bench(const SpeculationBenchArgs& args) {
  if (args.prompt_file.empty()) {
    return invalid_argument(
        "--lookup and --draft measure decoding a text: give it with -f/--file (what speculation can guess depends "
        "on the text)");
  }
  if (args.decode_tokens < 1 || args.repetitions < 1) {
    return invalid_argument("-n and -r must be at least 1, found ", args.decode_tokens, " and ", args.repetitions);
  }
  STATICLM_ASSIGN_OR_RETURN(const std::string text, read_input_file("--file", args.prompt_file, kMaxPromptFileBytes));
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, open_engine(args.model));
  STATICLM_ASSIGN_OR_RETURN(Speculation speculation, open_speculation(args.speculation, args.model, *engine));
  STATICLM_ASSIGN_OR_RETURN(const Tokenizer* tokenizer, engine->tokenizer());
  EncodeOptions encode;
  STATICLM_ASSIGN_OR_RETURN(const std::vector<int32_t> prompt, tokenizer->encode(text, encode));
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<LlmSession> session, engine->new_session());
  std::unique_ptr<LlmSession> draft_session;
  if (speculation.draft) {
    STATICLM_ASSIGN_OR_RETURN(draft_session, speculation.draft->new_session());
    speculation.options.draft = draft_session.get();
  }
  // No end of sequence: both runs do the same work, and (greedy, or sampled with one seed) their
  // tokens must agree.
  GenerationOptions plain;
  plain.sampling.temperature = args.temperature;
  plain.sampling.seed = args.seed;
  plain.max_new_tokens = args.decode_tokens + 1;  // the first token comes from the prefill
  plain.sample_vocab_limit = tokenizer->vocab_size();
  GenerationOptions speculative = plain;
  speculative.speculation = speculation.options;

  STATICLM_RETURN_IF_ERROR(generate_tokens(*session, prompt, plain).status());  // warm-up
  STATICLM_RETURN_IF_ERROR(generate_tokens(*session, prompt, speculative).status());
  std::vector<double> plain_rates;
  std::vector<double> speculative_rates;
  std::vector<double> ratios;
  SpeculationStats total;
  int64_t differing_runs = 0;
  for (int r = 0; r < args.repetitions; ++r) {
    // Alternated, each pair in the other order from the last: drift favours neither.
    GenerationResult results[2];
    for (int i = 0; i < 2; ++i) {
      const bool guess = (i == 0) == (r % 2 == 1);
      STATICLM_ASSIGN_OR_RETURN(results[guess ? 1 : 0], generate_tokens(*session, prompt, guess ? speculative : plain));
    }
    plain_rates.push_back(decode_rate(results[0]));
    speculative_rates.push_back(decode_rate(results[1]));
    ratios.push_back(speculative_rates.back() / plain_rates.back());
    total.drafted += results[1].speculation.drafted;
    total.accepted += results[1].speculation.accepted;
    total.checks += results[1].speculation.checks;
    differing_runs += results[0].tokens != results[1].tokens ? 1 : 0;
  }
  const Sample tg = summarize(plain_rates);
  const Sample sp = summarize(speculative_rates);
  const Sample ratio = summarize(ratios);
  const double acceptance =
      total.drafted > 0 ? static_cast<double>(total.accepted) / static_cast<double>(total.drafted) : 0.0;
  const char* proposer = speculation.draft ? "draft program" : "prompt lookup";
  if (args.json_output) {
    json doc = {{"model", args.model.path},
                {"proposer", proposer},
                {"draft", args.speculation.draft},
                {"lookup", args.speculation.lookup},
                {"draft_max", args.speculation.draft_max},
                {"prompt_tokens", prompt.size()},
                {"decode_tokens", args.decode_tokens},
                {"threads", engine->program()->thread_pool().num_threads()},
                {"temperature", args.temperature},
                {"plain_tokens_per_s", tg.mean},
                {"plain_sd", tg.sd},
                {"speculative_tokens_per_s", sp.mean},
                {"speculative_sd", sp.sd},
                {"speed_up", ratio.mean},
                {"speed_up_sd", ratio.sd},
                {"drafted", total.drafted},
                {"accepted", total.accepted},
                {"acceptance_rate", acceptance},
                {"checks", total.checks},
                {"runs_with_other_tokens", differing_runs},
                {"repetitions", args.repetitions}};
    std::printf("%s\n", doc.dump(2).c_str());
  } else {
    std::printf("model: %s; %s (--draft-max %d); prompt %zu tokens, %lld decoded, %s\n", args.model.path.c_str(),
                proposer, args.speculation.draft_max, prompt.size(), static_cast<long long>(args.decode_tokens),
                args.temperature > 0 ? str_cat("sampled at temperature ", args.temperature).c_str() : "greedy");
    std::printf("| %-12s | %18s |\n", "decode", "t/s");
    std::printf("| %-12s | %18s |\n", "------------", "-----------------:");
    std::printf("| %-12s | %10.2f ± %5.2f |\n", "plain", tg.mean, tg.sd);
    std::printf("| %-12s | %10.2f ± %5.2f |\n", "speculative", sp.mean, sp.sd);
    std::printf(
        "speed-up %.2fx ± %.2f (per pair of runs, alternated); %lld of %lld guessed tokens kept (%.0f%%) in "
        "%lld checks\n",
        ratio.mean, ratio.sd, static_cast<long long>(total.accepted), static_cast<long long>(total.drafted),
        100.0 * acceptance, static_cast<long long>(total.checks));
  }
  if (differing_runs > 0) {
    std::fprintf(stderr,
                 "staticlm bench: note: in %lld of %d runs the speculative tokens differed from plain decoding's: a "
                 "chunk's row and a decode step sum in different orders on these kernels "
                 "(docs/speculative_decoding.md)\n",
                 static_cast<long long>(differing_runs), args.repetitions);
  }
  return ok_status();
}

}  // namespace staticlm::cli
