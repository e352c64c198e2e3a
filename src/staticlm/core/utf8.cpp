// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/utf8.h"

namespace staticlm {
namespace {

constexpr char32_t kReplacementCharacter = 0xFFFD;

uint8_t byte_at(std::string_view text, size_t pos) {
  return static_cast<uint8_t>(text[pos]);
}

// The number of bytes a sequence with this lead byte has, or 0 for a byte that cannot lead.
size_t sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// The valid range of the second byte depends on the lead byte (this is what rules out overlong
// forms, surrogates and values above U+10FFFF); later bytes are always 0x80..0xBF.
bool second_byte_ok(uint8_t lead, uint8_t second) {
  uint8_t low = 0x80;
  uint8_t high = 0xBF;
  if (lead == 0xE0) low = 0xA0;
  if (lead == 0xED) high = 0x9F;
  if (lead == 0xF0) low = 0x90;
  if (lead == 0xF4) high = 0x8F;
  return second >= low && second <= high;
}

bool continuation_ok(uint8_t byte) {
  return byte >= 0x80 && byte <= 0xBF;
}

// How many bytes from `pos` form a valid prefix of one sequence (at most the full length).
size_t valid_prefix_length(std::string_view text, size_t pos, size_t length) {
  size_t count = 1;
  while (count < length && pos + count < text.size()) {
    uint8_t byte = byte_at(text, pos + count);
    bool ok = count == 1 ? second_byte_ok(byte_at(text, pos), byte) : continuation_ok(byte);
    if (!ok) break;
    ++count;
  }
  return count;
}

}  // namespace

size_t utf8_decode_char(std::string_view text, size_t pos, char32_t& code_point) {
  if (pos >= text.size()) return 0;
  uint8_t lead = byte_at(text, pos);
  size_t length = sequence_length(lead);
  if (length == 0) return 0;
  if (length == 1) {
    code_point = lead;
    return 1;
  }
  if (valid_prefix_length(text, pos, length) != length) return 0;
  char32_t value = lead & (0x7F >> length);
  for (size_t i = 1; i < length; ++i) {
    value = (value << 6) | (byte_at(text, pos + i) & 0x3F);
  }
  code_point = value;
  return length;
}

void utf8_append(std::string& out, char32_t code_point) {
  if (code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) {
    code_point = kReplacementCharacter;
  }
  if (code_point < 0x80) {
    out.push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}

bool utf8_is_valid(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    char32_t code_point = 0;
    size_t length = utf8_decode_char(text, pos, code_point);
    if (length == 0) return false;
    pos += length;
  }
  return true;
}

bool utf8_is_white_space(char32_t code_point) {
  if (code_point <= 0x7F) return code_point == ' ' || (code_point >= '\t' && code_point <= '\r');
  switch (code_point) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000: return true;
    default: return code_point >= 0x2000 && code_point <= 0x200A;
  }
}

size_t utf8_incomplete_tail_length(std::string_view text) {
  // A sequence is at most 4 bytes, so only the last 3 bytes can start an unfinished one.
  size_t first = text.size() > 3 ? text.size() - 3 : 0;
  for (size_t pos = first; pos < text.size(); ++pos) {
    size_t length = sequence_length(byte_at(text, pos));
    if (length <= 1) continue;
    size_t remaining = text.size() - pos;
    if (remaining < length && valid_prefix_length(text, pos, length) == remaining) {
      return remaining;
    }
  }
  return 0;
}

std::string utf8_repair(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    char32_t code_point = 0;
    size_t length = utf8_decode_char(text, pos, code_point);
    if (length > 0) {
      out.append(text.substr(pos, length));
      pos += length;
      continue;
    }
    size_t lead_length = sequence_length(byte_at(text, pos));
    pos += lead_length == 0 ? 1 : valid_prefix_length(text, pos, lead_length);
    utf8_append(out, kReplacementCharacter);
  }
  return out;
}

}  // namespace staticlm
