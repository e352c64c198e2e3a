// Helpers for the tokenizer tests: fixture paths, gunzip, tiny tokenizer.json documents.
#pragma once

#include <string>
#include <string_view>

namespace staticlm::tokenizer_test {

// tests/fixtures/tokenizers/<name> in the source tree.
std::string fixture_path(std::string_view name);

// The whole file; fails the current test (ADD_FAILURE) and returns "" when it cannot be read.
std::string read_file(const std::string& path);

// The inflated contents of a .gz file (ADD_FAILURE and "" on error).
std::string read_gzip_file(const std::string& path);

// True when `text` is valid UTF-8 (an independent check, not the library's).
bool is_valid_utf8(std::string_view text);

}  // namespace staticlm::tokenizer_test
