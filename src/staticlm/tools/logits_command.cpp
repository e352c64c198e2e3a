// SPDX-License-Identifier: Apache-2.0
// `staticlm logits MODEL --tokens ID,ID,... [--mode prefill|decode] [--out FILE]`: feeds the
// tokens and writes the logits of every fed position as raw little-endian float32
// [n_tokens, vocab] (to stdout when --out is absent).
#include <cstdio>
#include <string>
#include <vector>

#include "staticlm/tools/command.h"
#include "staticlm/tools/engine_flags.h"

namespace staticlm::cli {
namespace {

struct LogitsArgs {
  EngineArgs model;
  std::vector<int64_t> tokens;
  std::string mode = "prefill";
  std::string out;
};

Status run_logits(const LogitsArgs& args) {
  if (args.tokens.empty()) {
    return invalid_argument("--tokens: expected at least one token id");
  }
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, open_engine(args.model));
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<LlmSession> opened, engine->new_session());
  LlmSession& session = *opened;
  std::vector<int32_t> tokens;
  for (int64_t token : args.tokens) {
    if (token < 0 || token >= session.vocab_size()) {
      return invalid_argument("--tokens: token id ", token, " is outside the vocabulary [0, ", session.vocab_size(),
                              ")");
    }
    tokens.push_back(static_cast<int32_t>(token));
  }
  const auto vocab = static_cast<size_t>(session.vocab_size());
  std::vector<float> logits(tokens.size() * vocab, 0.0f);
  std::vector<bool> seen(tokens.size(), false);
  auto sink = [&](int64_t index, std::span<const float> row) {
    std::copy(row.begin(), row.end(), logits.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(index) * vocab));
    seen[static_cast<size_t>(index)] = true;
  };
  if (args.mode == "prefill") {
    if (!session.prefill_returns_all_logits()) {
      return failed_precondition(
          "this program's prefill returns only the last position's logits (exported with "
          "--logits last); use --mode decode");
    }
    STATICLM_RETURN_IF_ERROR(session.prefill(tokens, sink));
  } else {
    for (size_t i = 0; i < tokens.size(); ++i) {
      STATICLM_RETURN_IF_ERROR(
          session.decode(tokens[i], [&](int64_t, std::span<const float> row) { sink(static_cast<int64_t>(i), row); }));
    }
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    if (!seen[i]) {
      return internal_error("no logits were produced for token ", i);
    }
  }
  FILE* out = args.out.empty() ? stdout : std::fopen(args.out.c_str(), "wb");
  if (out == nullptr) {
    return unavailable("'", args.out, "': cannot open for writing");
  }
  const size_t written = std::fwrite(logits.data(), sizeof(float), logits.size(), out);
  const bool closed = out == stdout ? std::fflush(out) == 0 : std::fclose(out) == 0;
  if (written != logits.size() || !closed) {
    return unavailable("'", args.out.empty() ? "<stdout>" : args.out, "': write failed");
  }
  return ok_status();
}

}  // namespace

Command add_logits_command(CLI::App& parent) {
  auto args = std::make_shared<LogitsArgs>();
  CLI::App* app = parent.add_subcommand("logits", "Write the logits of every fed token as raw float32 [n, vocab]");
  app->add_option("model", args->model.path, "Program file (.slm)")->required();
  app->add_option("--tokens", args->tokens, "Token ids to feed")->delimiter(',')->required();
  app->add_option("--mode", args->mode, "Feed through prefill chunks, or one token at a time through decode")
      ->check(CLI::IsMember({"prefill", "decode"}))
      ->capture_default_str();
  app->add_option("--out", args->out, "Output file (default: stdout)");
  add_engine_flags(*app, args->model);
  return {app, [args]() { return run_logits(*args); }};
}

}  // namespace staticlm::cli
