// SPDX-License-Identifier: Apache-2.0
// `staticlm tokenize (--tokenizer FILE | MODEL) [--json] TEXT` prints token ids;
// `staticlm tokenize (--tokenizer FILE | MODEL) --decode IDS` turns ids back into text.
#include <cctype>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "staticlm/core/mapped_file.h"
#include "staticlm/llm/program_tokenizer.h"
#include "staticlm/tools/command.h"
#include "staticlm/tools/input_files.h"

namespace staticlm::cli {
namespace {

struct TokenizeArgs {
  std::vector<std::string> positional;  // [MODEL] TEXT, or MODEL with --decode
  std::string model;
  std::string tokenizer_file;
  std::string text;
  std::vector<std::string> decode;  // ids separated by commas or spaces, in one argument or several
  bool json = false;
  bool no_special = false;
};

Result<std::unique_ptr<Tokenizer>> open_tokenizer(const TokenizeArgs& args) {
  if (!args.tokenizer_file.empty()) {
    const std::string name = std::filesystem::path(args.tokenizer_file).filename().string();
    if (name.size() >= 6 && name.substr(name.size() - 6) == ".model") {
      STATICLM_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(args.tokenizer_file));
      return load_sentencepiece_model(file.bytes());
    }
    STATICLM_ASSIGN_OR_RETURN(std::string text, read_input_file("--tokenizer", args.tokenizer_file));
    const std::filesystem::path config =
        std::filesystem::path(args.tokenizer_file).parent_path() / "tokenizer_config.json";
    std::optional<std::string> config_text;
    if (std::filesystem::exists(config)) {
      STATICLM_ASSIGN_OR_RETURN(config_text, read_text_file(config.string()));
    }
    auto tokenizer =
        load_tokenizer_json(text, config_text ? std::optional<std::string_view>(*config_text) : std::nullopt);
    if (!tokenizer.ok()) {
      return tokenizer.status().with_context(str_cat("'", args.tokenizer_file, "'"));
    }
    return tokenizer;
  }
  if (args.model.empty()) {
    return invalid_argument("give a program file or --tokenizer FILE");
  }
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<ProgramFile> file, ProgramFile::open(args.model));
  return load_program_tokenizer(*file);
}

// "1,300", "1 300", "1, 300" and "1" "300" all give {1, 300}.
Result<std::vector<int32_t>> parse_decode_ids(const std::vector<std::string>& given) {
  std::vector<int32_t> ids;
  for (const std::string& argument : given) {
    size_t at = 0;
    while (at < argument.size()) {
      if (argument[at] == ',' || std::isspace(static_cast<unsigned char>(argument[at])) != 0) {
        ++at;
        continue;
      }
      size_t end = at;
      while (end < argument.size() && argument[end] != ',' &&
             std::isspace(static_cast<unsigned char>(argument[end])) == 0) {
        ++end;
      }
      const std::string_view piece(argument.data() + at, end - at);
      int64_t id = 0;
      const auto [parsed_end, error] = std::from_chars(piece.data(), piece.data() + piece.size(), id);
      if (error != std::errc() || parsed_end != piece.data() + piece.size() || id < 0 || id > INT32_MAX) {
        return invalid_argument("--decode: expected token ids (non-negative integers) separated by commas or spaces, ",
                                "found '", piece, "'");
      }
      ids.push_back(static_cast<int32_t>(id));
      at = end;
    }
  }
  if (ids.empty()) {
    return invalid_argument("--decode: expected token ids, found none");
  }
  return ids;
}

Status run_tokenize(const TokenizeArgs& args) {
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, open_tokenizer(args));
  if (!args.decode.empty()) {
    STATICLM_ASSIGN_OR_RETURN(const std::vector<int32_t> ids, parse_decode_ids(args.decode));
    STATICLM_ASSIGN_OR_RETURN(std::string text, tokenizer->decode(ids, false));
    if (args.json) {
      std::printf("%s\n", nlohmann::json(text).dump().c_str());
    } else {
      std::printf("%s\n", text.c_str());
    }
    return ok_status();
  }
  EncodeOptions options;
  options.add_special_tokens = !args.no_special;
  STATICLM_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer->encode(args.text, options));
  if (args.json) {
    nlohmann::json doc = nlohmann::json::array();
    for (int32_t id : ids) {
      auto piece = tokenizer->id_to_token(id);
      doc.push_back({{"id", id}, {"token", piece.ok() ? *piece : std::string()}});
    }
    std::printf("%s\n", doc.dump().c_str());
  } else {
    std::string line;
    for (size_t i = 0; i < ids.size(); ++i) {
      line += (i == 0 ? "" : " ") + std::to_string(ids[i]);
    }
    std::printf("%s\n", line.c_str());
  }
  return ok_status();
}

}  // namespace

Command add_tokenize_command(CLI::App& parent) {
  auto args = std::make_shared<TokenizeArgs>();
  CLI::App* app = parent.add_subcommand("tokenize", "Print the token ids of a text, or decode ids back to text");
  app->add_option("args", args->positional, "MODEL TEXT, or TEXT with --tokenizer (MODEL alone with --decode)");
  app->add_option("--tokenizer", args->tokenizer_file, "tokenizer.json or tokenizer.model to use instead of a program");
  app->add_option("--decode", args->decode, "Token ids to decode, separated by commas or spaces (\"1,300\", \"1 300\")")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_flag("--json", args->json, "Print JSON (ids with their token strings)");
  app->add_flag("--no-special", args->no_special, "Do not add BOS or other special tokens");
  return {app, [args]() -> Status {
            // Positionals: the program file unless --tokenizer names the tokenizer, then the text
            // unless --decode gives ids.
            std::vector<std::string> rest = args->positional;
            if (args->tokenizer_file.empty()) {
              if (rest.empty() && !args->decode.empty()) {
                return invalid_argument("give a program file (or --tokenizer FILE) before --decode, which takes the ",
                                        "arguments after it as token ids");
              }
              if (rest.empty()) {
                return invalid_argument("give a program file (or --tokenizer FILE) and the text to tokenize");
              }
              args->model = rest.front();
              rest.erase(rest.begin());
            }
            const size_t wanted = args->decode.empty() ? 1 : 0;
            if (rest.size() != wanted) {
              return invalid_argument(wanted == 1 ? "expected one TEXT argument" : "--decode takes no TEXT argument",
                                      ", found ", rest.size());
            }
            if (wanted == 1) {
              args->text = rest.front();
            }
            return run_tokenize(*args);
          }};
}

}  // namespace staticlm::cli
