// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/tokenizer/byte_level.h"

#include <array>

#include "staticlm/core/utf8.h"

namespace staticlm {
namespace {

constexpr char32_t kUnmapped = 0;

struct ByteLevelTables {
  std::array<std::string, 256> byte_to_text;
  // Indexed by code point; the alphabet ends below U+0144.
  std::array<int16_t, 0x144> char_to_byte{};
};

const ByteLevelTables& tables() {
  static const ByteLevelTables instance = [] {
    ByteLevelTables built;
    built.char_to_byte.fill(-1);
    std::array<char32_t, 256> mapping{};
    mapping.fill(kUnmapped);
    auto keep = [](int byte) {
      return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF);
    };
    char32_t next_shifted = 0x100;
    for (int byte = 0; byte < 256; ++byte) {
      mapping[byte] = keep(byte) ? static_cast<char32_t>(byte) : next_shifted++;
    }
    for (int byte = 0; byte < 256; ++byte) {
      utf8_append(built.byte_to_text[byte], mapping[byte]);
      built.char_to_byte[mapping[byte]] = static_cast<int16_t>(byte);
    }
    return built;
  }();
  return instance;
}

}  // namespace

void byte_level_encode(std::string_view bytes, std::string& out) {
  const ByteLevelTables& table = tables();
  for (char byte : bytes) {
    out += table.byte_to_text[static_cast<uint8_t>(byte)];
  }
}

std::optional<std::string> byte_level_decode(std::string_view text) {
  const ByteLevelTables& table = tables();
  std::string out;
  out.reserve(text.size());
  const bool complete = utf8_walk(text, [&](char32_t code_point, size_t, size_t length) {
    if (length == 0 || code_point >= table.char_to_byte.size() || table.char_to_byte[code_point] < 0) {
      return false;
    }
    out.push_back(static_cast<char>(table.char_to_byte[code_point]));
    return true;
  });
  if (!complete) {
    return std::nullopt;
  }
  return out;
}

int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  int high = hex(text[3]);
  int low = hex(text[4]);
  return high < 0 || low < 0 ? -1 : high * 16 + low;
}

}  // namespace staticlm
