// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/program_tokenizer.h"

#include <string_view>

namespace staticlm {
namespace {

std::string_view as_text(std::span<const uint8_t> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> load_program_tokenizer(const ProgramFile& file) {
  if (auto json = file.embedded_file("tokenizer.json")) {
    std::optional<std::string_view> config;
    if (auto embedded_config = file.embedded_file("tokenizer_config.json")) {
      config = as_text(*embedded_config);
    }
    auto tokenizer = load_tokenizer_json(as_text(*json), config);
    if (!tokenizer.ok()) {
      return tokenizer.status().with_context(str_cat("'", file.path(), "': embedded tokenizer.json"));
    }
    return tokenizer;
  }
  if (auto model = file.embedded_file("tokenizer.model")) {
    auto tokenizer = load_sentencepiece_model(*model);
    if (!tokenizer.ok()) {
      return tokenizer.status().with_context(str_cat("'", file.path(), "': embedded tokenizer.model"));
    }
    return tokenizer;
  }
  return not_found("'", file.path(),
                   "' embeds no tokenizer (tokenizer.json or tokenizer.model), so it takes token ids ",
                   "only: `staticlm logits --tokens 1,2,3`, a /v1/completions prompt of ids, or Python's ",
                   "Program.run_method; or export it again from a checkpoint with its tokenizer");
}

}  // namespace staticlm
