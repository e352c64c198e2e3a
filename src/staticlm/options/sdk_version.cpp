// SPDX-License-Identifier: Apache-2.0
#include "staticlm/options/sdk_version.h"

#include <charconv>
#include <vector>

namespace staticlm {

Result<SdkVersion> SdkVersion::parse(std::string_view text) {
  std::string_view rest = text;
  if (!rest.empty() && (rest.front() == 'v' || rest.front() == 'V')) {
    rest.remove_prefix(1);
  }
  std::vector<int64_t> parts;
  while (true) {
    const size_t dot = rest.find('.');
    const std::string_view piece = rest.substr(0, dot);
    int64_t number = 0;
    const auto [end, error] = std::from_chars(piece.data(), piece.data() + piece.size(), number);
    if (piece.empty() || error != std::errc() || end != piece.data() + piece.size() || number < 0) {
      return invalid_argument("'", text,
                              "' is not a version (expected MAJOR.MINOR[.PATCH[.BUILD]], e.g. 2.37.0.250724)");
    }
    parts.push_back(number);
    if (dot == std::string_view::npos) {
      break;
    }
    rest.remove_prefix(dot + 1);
  }
  if (parts.size() > 4) {
    return invalid_argument("'", text, "' is not a version (more than four parts)");
  }
  parts.resize(4, 0);
  return SdkVersion{parts[0], parts[1], parts[2], parts[3]};
}

std::string SdkVersion::to_string() const {
  std::string out = str_cat(major, ".", minor, ".", patch);
  if (build != 0) {
    out += str_cat(".", build);
  }
  return out;
}

}  // namespace staticlm
