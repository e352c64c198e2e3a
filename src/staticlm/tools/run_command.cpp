// `staticlm run MODEL -p PROMPT [...]`: streams generated text to stdout and the run
// statistics to stderr.
#include <cstdio>
#include <string>
#include <vector>

#include "staticlm/format/metadata.h"
#include "staticlm/llm/generator.h"
#include "staticlm/llm/program_tokenizer.h"
#include "staticlm/tools/command.h"
#include "staticlm/tools/model_loader.h"

namespace staticlm::cli {
namespace {

struct RunArgs {
  ModelLoadOptions model;
  std::string prompt;
  int64_t max_new_tokens = 128;
  SamplingParams sampling;
  std::vector<std::string> stop;
  bool quiet = false;
};

void print_stats(const LoadedModel& model, const GenerationResult& result) {
  const double prefill_rate =
      result.prefill_seconds > 0 ? static_cast<double>(result.prompt_tokens.size()) / result.prefill_seconds : 0.0;
  const double decode_rate =
      result.decode_seconds > 0 ? static_cast<double>(result.decode_steps) / result.decode_seconds : 0.0;
  std::fprintf(stderr, "\n--- %s ---\n", stop_reason_name(result.stop_reason).data());
  std::fprintf(stderr, "load: %.3f s (contract %s v%lld)\n", model.load_seconds, model.contract->name().data(),
               static_cast<long long>(model.contract->version()));
  std::fprintf(stderr, "prompt: %zu tokens, prefill %.1f tok/s, time to first token %.3f s\n",
               result.prompt_tokens.size(), prefill_rate, result.time_to_first_token_seconds);
  std::fprintf(stderr, "generated: %zu tokens, decode %.1f tok/s\n", result.tokens.size(), decode_rate);
  std::fprintf(stderr, "peak RSS: %s\n", human_bytes(result.peak_rss_bytes).c_str());
  std::string usage;
  for (const AllocatorUsage& entry : result.io.per_allocator) {
    usage += str_cat(usage.empty() ? "" : ", ", entry.allocator, " ", entry.buffers, " buffers / ",
                     human_bytes(entry.bytes));
  }
  std::fprintf(stderr, "I/O buffers: %s; heap fallbacks: %llu (%s)\n", usage.c_str(),
               static_cast<unsigned long long>(result.io.fallbacks), human_bytes(result.io.fallback_bytes).c_str());
}

Status run_generation(const RunArgs& args) {
  STATICLM_ASSIGN_OR_RETURN(LoadedModel model, load_model(args.model));
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, load_program_tokenizer(model.program->file()));
  GenerationOptions options;
  options.sampling = args.sampling;
  options.max_new_tokens = args.max_new_tokens;
  options.stop_strings = args.stop;
  // End of sequence: every id the program's metadata lists, plus what the tokenizer knows.
  if (auto eos = metadata_int_list(model.program->file(), "eos_token_ids"); eos.ok()) {
    for (int64_t id : *eos) {
      options.eos_ids.push_back(static_cast<int32_t>(id));
    }
  }
  for (int32_t id : tokenizer->eos_ids()) {
    options.eos_ids.push_back(id);
  }
  auto result = generate_text(*model.session, *tokenizer, args.prompt, options, [](std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  });
  std::fputc('\n', stdout);
  STATICLM_RETURN_IF_ERROR(result.status());
  if (!args.quiet) {
    print_stats(model, *result);
  }
  return ok_status();
}

}  // namespace

Command add_run_command(CLI::App& parent) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* app = parent.add_subcommand("run", "Generate text from a prompt (text to stdout, stats to stderr)");
  app->add_option("model", args->model.path, "Program file (.slm)")->required();
  app->add_option("-p,--prompt", args->prompt, "Prompt text")->required();
  app->add_option("-n,--max-new-tokens", args->max_new_tokens, "Tokens to generate at most")->capture_default_str();
  app->add_option("--temp", args->sampling.temperature, "Sampling temperature (0 = greedy)")->capture_default_str();
  app->add_option("--top-k", args->sampling.top_k, "Keep the k most likely tokens (0 = off)")->capture_default_str();
  app->add_option("--top-p", args->sampling.top_p, "Nucleus sampling threshold")->capture_default_str();
  app->add_option("--min-p", args->sampling.min_p, "Drop tokens below min_p x the top probability")
      ->capture_default_str();
  app->add_option("--repeat-penalty", args->sampling.repetition_penalty, "Repetition penalty (1 = off)")
      ->capture_default_str();
  app->add_option("--seed", args->sampling.seed, "Random seed")->capture_default_str();
  app->add_option("--stop", args->stop, "Stop before this text (repeatable)");
  app->add_option("--io-allocator", args->model.io_allocator,
                  "I/O buffer allocator (default: the program's backend's preferred one, else heap)");
  app->add_flag("--strict-io", args->model.strict_io, "Fail instead of falling back to the heap");
  app->add_option("--threads", args->model.num_threads, "Worker threads (0 = all cores)");
  app->add_flag("-q,--quiet", args->quiet, "Do not print statistics");
  return {app, [args]() { return run_generation(*args); }};
}

}  // namespace staticlm::cli
