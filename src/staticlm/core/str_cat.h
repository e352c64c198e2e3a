// SPDX-License-Identifier: Apache-2.0
// str_cat: builds a message from any streamable pieces. g++ 12 has no <format>, and error
// messages are built only on failure paths, so an ostringstream is fine here.
#pragma once

#include <cstdint>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace staticlm {

template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

// "[1,4,512,64]"
std::string shape_string(std::span<const int64_t> shape);

// Joins the pieces with a separator: join({"a","b"}, ", ") == "a, b".
std::string join(std::span<const std::string> pieces, std::string_view separator);

}  // namespace staticlm
