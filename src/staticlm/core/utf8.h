// SPDX-License-Identifier: Apache-2.0
// UTF-8 helpers shared by the tokenizers and the chat templates. Token pieces are raw byte
// strings (a byte-level or byte-fallback token may hold part of a character) and template text is
// untrusted, so every function here accepts arbitrary bytes and never assumes they are valid.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace staticlm {

// Decodes the character starting at text[pos]. On success stores it in `code_point` and returns
// its length in bytes (1..4); returns 0 when the bytes there are not a valid, complete sequence
// (overlong forms, surrogates and values above U+10FFFF are invalid).
size_t utf8_decode_char(std::string_view text, size_t pos, char32_t& code_point);

// Appends the UTF-8 encoding of `code_point` (U+FFFD for values that are not characters).
void utf8_append(std::string& out, char32_t code_point);

bool utf8_is_valid(std::string_view text);

// The Unicode White_Space property (what Rust's char::is_whitespace tests).
bool utf8_is_white_space(char32_t code_point);

// Length of the trailing bytes of `text` that start a valid sequence but stop before its end
// ("\xE2\x82" at the end of "ab\xE2\x82" gives 2); 0 when text ends on a character boundary or
// with bytes that can never become valid.
size_t utf8_incomplete_tail_length(std::string_view text);

// Replaces each maximal ill-formed subsequence with U+FFFD, the way the WHATWG decoder (and so
// the JavaScript TextDecoder and Rust's from_utf8_lossy) does, so repaired text matches theirs.
std::string utf8_repair(std::string_view text);

// Walks `text` one code point at a time: calls visit(code_point, pos, length) for each valid
// sequence, and visit(U+FFFD, pos, 0) for a byte that starts none (the walk then steps over that
// one byte). Stops when visit returns false; returns whether it reached the end.
template <typename Visit>
bool utf8_walk(std::string_view text, Visit&& visit) {
  size_t pos = 0;
  while (pos < text.size()) {
    char32_t code_point = 0;
    const size_t length = utf8_decode_char(text, pos, code_point);
    if (!visit(length == 0 ? char32_t{0xFFFD} : code_point, pos, length)) {
      return false;
    }
    pos += length == 0 ? 1 : length;
  }
  return true;
}

// Splits `text` into characters for BPE: valid sequences become one piece each, every byte of an
// invalid sequence becomes its own piece. Calls `visit(std::string_view piece)` in order.
template <typename Visit>
void utf8_for_each_char(std::string_view text, Visit&& visit) {
  utf8_walk(text, [&](char32_t, size_t pos, size_t length) {
    visit(text.substr(pos, length == 0 ? 1 : length));
    return true;
  });
}

}  // namespace staticlm
