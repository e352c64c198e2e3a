// SPDX-License-Identifier: Apache-2.0
// `staticlm eval MODEL --text FILE [--ctx N] [--stride N] [--json]`: the perplexity of a text file
// under the program (llm/perplexity.h: windows of --ctx tokens every --stride tokens, each scoring
// the tokens no earlier window did), with a progress bar on stderr and the result, ± its standard
// error, on stdout.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "staticlm/llm/perplexity.h"
#include "staticlm/tools/command.h"
#include "staticlm/tools/engine_flags.h"
#include "staticlm/tools/input_files.h"

namespace staticlm::cli {
namespace {

// Windows of the bundled model's training; a program with a shorter cache uses its own length.
constexpr int64_t kDefaultCtx = 512;

struct EvalArgs {
  EngineArgs model;
  std::string text;
  int64_t ctx = 0;     // 0: min(512, max_cache_len)
  int64_t stride = 0;  // 0: ctx / 2
  bool json_output = false;
};

Result<std::string> read_text(const std::string& path) {
  STATICLM_ASSIGN_OR_RETURN(std::string text, read_input_file("--text", path));
  if (text.empty()) {
    return invalid_argument("--text '", path, "': the file is empty");
  }
  return text;
}

void draw_progress(int64_t done, int64_t windows, double perplexity) {
  constexpr int kWidth = 30;
  const auto filled = static_cast<int>(kWidth * done / windows);
  std::fprintf(stderr, "\r[%s%s] window %lld/%lld, perplexity so far %.4f", std::string(filled, '#').c_str(),
               std::string(kWidth - filled, '.').c_str(), static_cast<long long>(done), static_cast<long long>(windows),
               perplexity);
  if (done == windows) {
    std::fprintf(stderr, "\n");
  }
  std::fflush(stderr);
}

Status run_eval(const EvalArgs& args) {
  STATICLM_ASSIGN_OR_RETURN(const std::string text, read_text(args.text));
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, open_engine(args.model));
  STATICLM_ASSIGN_OR_RETURN(const Tokenizer* tokenizer, engine->tokenizer());
  STATICLM_ASSIGN_OR_RETURN(std::vector<int32_t> tokens, tokenizer->encode(text, EncodeOptions{}));
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<LlmSession> session, engine->new_session());
  PerplexityOptions options;
  options.ctx = args.ctx > 0 ? args.ctx : std::min(kDefaultCtx, session->max_cache_len());
  options.stride = args.stride > 0 ? args.stride : std::max<int64_t>(1, options.ctx / 2);
  if (!args.json_output) {
    options.progress = draw_progress;
  }
  auto result = compute_perplexity(*session, tokens, options);
  if (!result.ok()) {
    const std::pair<std::string_view, std::string_view> flags[] = {{"ctx", "--ctx"}, {"stride", "--stride"}};
    return with_flag_names(result.status(), flags);
  }
  if (args.json_output) {
    const nlohmann::json doc = {{"model", args.model.path},
                                {"text", args.text},
                                {"tokens", tokens.size()},
                                {"ctx", options.ctx},
                                {"stride", options.stride},
                                {"windows", result->windows},
                                {"scored_tokens", result->scored_tokens},
                                {"mean_nll", result->mean_nll},
                                {"perplexity", result->perplexity},
                                {"standard_error", result->standard_error}};
    std::printf("%s\n", doc.dump(2).c_str());
    return ok_status();
  }
  std::printf("perplexity: %.4f ± %.4f over %lld tokens (%lld windows of %lld, stride %lld; %s)\n", result->perplexity,
              result->standard_error, static_cast<long long>(result->scored_tokens),
              static_cast<long long>(result->windows), static_cast<long long>(options.ctx),
              static_cast<long long>(options.stride), args.text.c_str());
  return ok_status();
}

}  // namespace

Command add_eval_command(CLI::App& parent) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* app = parent.add_subcommand("eval", "Perplexity of a text file under the program");
  app->add_option("model", args->model.path, "Program file (.slm)")->required();
  app->add_option("--text", args->text, "Text file to score (UTF-8, tokenized whole with the program's tokenizer)")
      ->required();
  app->add_option("-c,--ctx", args->ctx, "Tokens per window (default: 512, or the program's max_cache_len if less)");
  app->add_option("--stride", args->stride, "Tokens between window starts (default: half the window)");
  app->add_flag("--json", args->json_output, "Print the result as JSON (no progress bar)");
  add_engine_flags(*app, args->model);
  return {app, [args]() { return run_eval(*args); }};
}

}  // namespace staticlm::cli
