// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/tokenizer/tokenizer_test_util.h"

#include <zlib.h>

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "staticlm/llm/tokenizer/streaming_decoder.h"

namespace staticlm::tokenizer_test {

std::string fixture_path(std::string_view name) {
  return std::string(STATICLM_SOURCE_DIR) + "/tests/fixtures/tokenizers/" + std::string(name);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ADD_FAILURE() << "cannot open " << path;
    return "";
  }
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string read_gzip_file(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    ADD_FAILURE() << "cannot open " << path;
    return "";
  }
  std::string out;
  char buffer[1 << 16];
  int count = 0;
  while ((count = gzread(file, buffer, sizeof(buffer))) > 0) out.append(buffer, static_cast<size_t>(count));
  if (count < 0) {
    int code = 0;
    ADD_FAILURE() << "cannot inflate " << path << ": " << gzerror(file, &code);
    out.clear();
  }
  gzclose(file);
  return out;
}

bool is_valid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    auto byte = static_cast<unsigned char>(text[i]);
    size_t length = byte < 0x80 ? 1 : (byte >> 5) == 6 ? 2 : (byte >> 4) == 14 ? 3 : (byte >> 3) == 30 ? 4 : 0;
    if (length == 0 || i + length > text.size()) return false;
    uint32_t value = length == 1 ? byte : byte & (0xFF >> (length + 1));
    for (size_t k = 1; k < length; ++k) {
      auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      value = (value << 6) | (next & 0x3F);
    }
    static constexpr uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
    if (value < kMinimum[length] || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return false;
    i += length;
  }
  return true;
}

}  // namespace staticlm::tokenizer_test

namespace staticlm::tokenizer_test {

Streamed stream_decode(const Tokenizer& tokenizer, std::span<const int32_t> ids, bool skip_special) {
  StreamingDecoder stream(tokenizer, skip_special);
  Streamed out;
  for (int32_t id : ids) {
    auto chunk = stream.feed(id);
    EXPECT_TRUE(chunk.ok()) << chunk.status().to_string();
    if (!chunk.ok()) return out;
    EXPECT_TRUE(is_valid_utf8(*chunk));
    out.held += chunk->empty() ? 1 : 0;
    out.text += *chunk;
  }
  auto rest = stream.flush();
  EXPECT_TRUE(rest.ok());
  if (rest.ok()) out.text += *rest;
  return out;
}

}  // namespace staticlm::tokenizer_test
