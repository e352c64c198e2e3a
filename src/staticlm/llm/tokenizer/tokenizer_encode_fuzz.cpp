// SPDX-License-Identifier: Apache-2.0
// libFuzzer: arbitrary text (invalid UTF-8 included) through a real byte-level BPE tokenizer
// (the llama3 fixture's) and back. Encoding must give ids in the vocabulary or a Status, and
// decoding what it encoded must give the text back when the text is valid UTF-8.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "staticlm/core/mapped_file.h"
#include "staticlm/core/utf8.h"
#include "staticlm/llm/tokenizer/tokenizer.h"

namespace {

const staticlm::Tokenizer& fixture_tokenizer() {
  static const auto* tokenizer = [] {
    const std::string dir = std::string(STATICLM_SOURCE_DIR) + "/tests/fixtures/llama3/";
    auto json = staticlm::read_text_file(dir + "tokenizer.json");
    auto config = staticlm::read_text_file(dir + "tokenizer_config.json");
    auto loaded = staticlm::load_tokenizer_json(json.value(), config.value());
    return loaded.value().release();
  }();
  return *tokenizer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const staticlm::Tokenizer& tokenizer = fixture_tokenizer();
  staticlm::EncodeOptions options;
  options.add_special_tokens = false;
  auto ids = tokenizer.encode(text, options);
  if (!ids.ok()) {
    return 0;
  }
  for (int32_t id : *ids) {
    if (id < 0 || id >= tokenizer.vocab_size()) {
      std::abort();
    }
  }
  auto decoded = tokenizer.decode(*ids, /*skip_special=*/false);
  if (staticlm::utf8_is_valid(text) && decoded.ok() && *decoded != text) {
    // Byte-level BPE is lossless on valid UTF-8 (no normalizer in this fixture).
    std::abort();
  }
  return 0;
}
