// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/tokenizer/tokenizer.h"

#include <array>
#include <filesystem>
#include <utility>

#include "staticlm/core/mapped_file.h"
#include "staticlm/core/utf8.h"
#include "staticlm/llm/tokenizer/sentencepiece_tokenizer.h"

namespace staticlm {
namespace {

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  size_t pos = text.find(from);
  while (pos != std::string::npos) {
    text.replace(pos, from.size(), to);
    pos = text.find(from, pos + to.size());
  }
}

}  // namespace

std::string clean_up_tokenization(std::string_view text) {
  // The order matters (" ' " before " 's"); it is the transformers order.
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 10> kRules = {{
      {" .", "."},
      {" ?", "?"},
      {" !", "!"},
      {" ,", ","},
      {" ' ", "'"},
      {" n't", "n't"},
      {" 'm", "'m"},
      {" 's", "'s"},
      {" 've", "'ve"},
      {" 're", "'re"},
  }};
  std::string out(text);
  for (const auto& [from, to] : kRules) replace_all(out, from, to);
  return out;
}

Result<std::string> Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  STATICLM_ASSIGN_OR_RETURN(std::string bytes, decode_bytes(ids, skip_special));
  std::string text = utf8_repair(bytes);
  if (clean_up_tokenization_spaces()) text = clean_up_tokenization(text);
  return text;
}

Result<std::unique_ptr<Tokenizer>> load_sentencepiece_model(std::span<const uint8_t> model_bytes) {
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<SentencePieceTokenizer> tokenizer,
                            SentencePieceTokenizer::load(model_bytes));
  return std::unique_ptr<Tokenizer>(std::move(tokenizer));
}

Result<std::unique_ptr<Tokenizer>> load_tokenizer_from_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::path json_path = fs::path(dir) / "tokenizer.json";
  fs::path config_path = fs::path(dir) / "tokenizer_config.json";
  fs::path model_path = fs::path(dir) / "tokenizer.model";
  if (fs::exists(json_path, error)) {
    STATICLM_ASSIGN_OR_RETURN(std::string json_text, read_text_file(json_path.string()));
    std::optional<std::string> config_text;
    if (fs::exists(config_path, error)) {
      STATICLM_ASSIGN_OR_RETURN(config_text, read_text_file(config_path.string()));
    }
    Result<std::unique_ptr<Tokenizer>> tokenizer =
        load_tokenizer_json(json_text, config_text ? std::optional<std::string_view>(*config_text) : std::nullopt);
    if (!tokenizer.ok()) return tokenizer.status().with_context(dir);
    return tokenizer;
  }
  if (fs::exists(model_path, error)) {
    STATICLM_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(model_path.string()));
    Result<std::unique_ptr<Tokenizer>> tokenizer = load_sentencepiece_model(file.bytes());
    if (!tokenizer.ok()) return tokenizer.status().with_context(model_path.string());
    return tokenizer;
  }
  return not_found(dir, ": no tokenizer.json or tokenizer.model in this directory");
}

}  // namespace staticlm
