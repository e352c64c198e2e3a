// SPDX-License-Identifier: Apache-2.0
// `staticlm embed MODEL (-p TEXT ... | -f FILE) [--pooling mean|last|none] [--normalize]`: one JSON
// line per text, {"index", "n_tokens", "embedding"} (with --pooling none an array per token), from
// the program's embeddings method (docs/embeddings.md). A file gives one text per line, as llama.cpp's llama-embedding
// reads its prompt; empty lines are skipped.
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "staticlm/llm/embedding.h"
#include "staticlm/tools/command.h"
#include "staticlm/tools/engine_flags.h"
#include "staticlm/tools/input_files.h"

namespace staticlm::cli {
namespace {

struct EmbedArgs {
  EngineArgs model;
  std::vector<std::string> prompts;
  std::string file;
  std::string pooling;
  bool normalize = false;
};

Result<std::vector<std::string>> texts_of(const EmbedArgs& args) {
  if (args.prompts.empty() == args.file.empty()) {
    return invalid_argument("give the texts to embed with -p TEXT (repeatable) or -f FILE (one per line), not both");
  }
  if (!args.prompts.empty()) {
    return args.prompts;
  }
  STATICLM_ASSIGN_OR_RETURN(std::string content, read_input_file("--file", args.file));
  std::vector<std::string> texts;
  size_t begin = 0;
  while (begin <= content.size()) {
    size_t end = content.find('\n', begin);
    if (end == std::string::npos) {
      end = content.size();
    }
    std::string line = content.substr(begin, end - begin);
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    if (!line.empty()) {
      texts.push_back(std::move(line));
    }
    begin = end + 1;
  }
  if (texts.empty()) {
    return invalid_argument("--file: '", args.file, "' has no non-empty line to embed");
  }
  return texts;
}

Status run_embed(const EmbedArgs& args) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<std::string> texts, texts_of(args));
  EmbeddingOptions options;
  options.normalize = args.normalize;
  if (!args.pooling.empty()) {
    auto pooling = parse_pooling(args.pooling);
    if (!pooling.ok()) {
      return pooling.status().with_context("--pooling");
    }
    options.pooling = *pooling;
  }
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, open_engine(args.model));
  STATICLM_ASSIGN_OR_RETURN(const Tokenizer* tokenizer, engine->tokenizer());
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<LlmSession> session, engine->new_session());
  if (session->embedding_pooling().empty()) {
    return failed_precondition(
        "'", args.model.path, "' has no embeddings method: export it with --embeddings mean|last (docs/embeddings.md)");
  }
  for (size_t i = 0; i < texts.size(); ++i) {
    STATICLM_ASSIGN_OR_RETURN(std::vector<int32_t> tokens, tokenizer->encode(texts[i]));
    auto embedding = embed_tokens(*session, tokens, options);
    if (!embedding.ok()) {
      return embedding.status().with_context(str_cat("text ", i + 1));
    }
    nlohmann::ordered_json values = *embedding;
    if (options.pooling == Pooling::kNone) {
      const auto width = static_cast<std::ptrdiff_t>(session->hidden_size());
      values = nlohmann::ordered_json::array();
      for (auto row = embedding->begin(); row != embedding->end(); row += width) {
        values.push_back(std::vector<float>(row, row + width));
      }
    }
    const nlohmann::ordered_json line = {{"index", i}, {"n_tokens", tokens.size()}, {"embedding", std::move(values)}};
    std::printf("%s\n", line.dump().c_str());
  }
  if (std::fflush(stdout) != 0) {
    return unavailable("<stdout>: write failed");
  }
  return ok_status();
}

}  // namespace

Command add_embed_command(CLI::App& parent) {
  auto args = std::make_shared<EmbedArgs>();
  CLI::App* app =
      parent.add_subcommand("embed", "Print the embedding of each text (a program exported with --embeddings)");
  app->add_option("model", args->model.path, "Program file (.slm)")->required();
  app->add_option("-p,--prompt", args->prompts, "A text to embed (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("-f,--file", args->file, "A file of texts to embed, one per line");
  app->add_option("--pooling", args->pooling,
                  "mean (of every token's hidden state), last (the last token's) or none (every token's); default: "
                  "the program's");
  app->add_flag("--normalize", args->normalize, "Divide each embedding by its L2 norm");
  add_engine_flags(*app, args->model);
  return {app, [args]() { return run_embed(*args); }};
}

}  // namespace staticlm::cli
