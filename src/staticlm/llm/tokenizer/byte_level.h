// SPDX-License-Identifier: Apache-2.0
// The GPT-2 byte-to-character alphabet used by ByteLevel pre-tokenizers and decoders: every byte
// maps to one printable character (printable Latin-1 bytes to themselves, the rest to U+0100..),
// so a byte string becomes text the BPE vocabulary can hold.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace staticlm {

// Appends the byte-level characters for each byte of `bytes`.
void byte_level_encode(std::string_view bytes, std::string& out);

// Maps each character of `text` back to its byte. Returns nullopt when a character is outside the
// alphabet (added tokens such as "<|im start|>" with a space are then kept verbatim by callers).
std::optional<std::string> byte_level_decode(std::string_view text);

// The byte of a byte-fallback token spelled "<0xAB>", or -1 for any other token.
int parse_byte_token(std::string_view text);

}  // namespace staticlm
