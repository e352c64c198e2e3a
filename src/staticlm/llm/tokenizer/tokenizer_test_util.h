// SPDX-License-Identifier: Apache-2.0
// Helpers for the tokenizer tests: fixture paths, gunzip, tiny tokenizer.json documents.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace staticlm {
class Tokenizer;
}

namespace staticlm::tokenizer_test {

// tests/fixtures/tokenizers/<name> in the source tree.
std::string fixture_path(std::string_view name);

// The whole file; fails the current test (ADD_FAILURE) and returns "" when it cannot be read.
std::string read_file(const std::string& path);

// The inflated contents of a .gz file (ADD_FAILURE and "" on error).
std::string read_gzip_file(const std::string& path);

// True when `text` is valid UTF-8 (an independent check, not the library's).
bool is_valid_utf8(std::string_view text);

struct Streamed {
  std::string text;  // every chunk, then the flush
  int held = 0;      // ids after which nothing could be emitted yet
};

// Feeds `ids` one by one through a StreamingDecoder, expecting every chunk to be valid UTF-8.
Streamed stream_decode(const Tokenizer& tokenizer, std::span<const int32_t> ids, bool skip_special);

}  // namespace staticlm::tokenizer_test
