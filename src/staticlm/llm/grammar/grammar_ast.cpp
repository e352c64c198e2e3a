// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/grammar/grammar_ast.h"

#include <algorithm>

namespace staticlm {
namespace {

constexpr char32_t kSurrogateFirst = 0xD800;
constexpr char32_t kSurrogateLast = 0xDFFF;

}  // namespace

std::vector<CodePointRange> normalize_ranges(std::vector<CodePointRange> ranges) {
  std::vector<CodePointRange> split;
  for (const CodePointRange& range : ranges) {
    if (range.first > range.last || range.first > kMaxCodePoint) {
      continue;
    }
    const char32_t last = std::min(range.last, kMaxCodePoint);
    if (range.first < kSurrogateFirst) {
      split.push_back({range.first, std::min<char32_t>(last, kSurrogateFirst - 1)});
    }
    if (last > kSurrogateLast) {
      split.push_back({std::max<char32_t>(range.first, kSurrogateLast + 1), last});
    }
  }
  std::sort(split.begin(), split.end(),
            [](const CodePointRange& a, const CodePointRange& b) { return a.first < b.first; });
  std::vector<CodePointRange> merged;
  for (const CodePointRange& range : split) {
    if (!merged.empty() && range.first <= merged.back().last + 1) {
      merged.back().last = std::max(merged.back().last, range.last);
    } else {
      merged.push_back(range);
    }
  }
  return merged;
}

std::vector<CodePointRange> complement_ranges(const std::vector<CodePointRange>& ranges) {
  std::vector<CodePointRange> out;
  char32_t next = 0;
  for (const CodePointRange& range : ranges) {
    if (range.first > next) {
      out.push_back({next, range.first - 1});
    }
    next = range.last + 1;
  }
  if (next <= kMaxCodePoint) {
    out.push_back({next, kMaxCodePoint});
  }
  return normalize_ranges(std::move(out));
}

}  // namespace staticlm
