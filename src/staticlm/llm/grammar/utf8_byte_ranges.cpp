// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/grammar/utf8_byte_ranges.h"

#include <string>

#include "staticlm/core/utf8.h"

namespace staticlm {
namespace {

constexpr char32_t kLengthLimits[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodePoint};

void split(char32_t first, char32_t last, std::vector<std::vector<ByteRange>>& out) {
  // Both ends must encode to the same length.
  for (char32_t limit : kLengthLimits) {
    if (first <= limit && last > limit) {
      split(first, limit, out);
      split(limit + 1, last, out);
      return;
    }
  }
  std::string low;
  std::string high;
  utf8_append(low, first);
  utf8_append(high, last);
  // Every continuation byte below a differing lead must span its whole range [80-BF], or the
  // ranges would pair bytes that are not in the set.
  for (size_t i = 1; i < low.size(); ++i) {
    const char32_t mask = (char32_t{1} << (6 * i)) - 1;
    if ((first & ~mask) != (last & ~mask)) {
      if ((first & mask) != 0) {
        split(first, first | mask, out);
        split((first | mask) + 1, last, out);
        return;
      }
      if ((last & mask) != mask) {
        split(first, (last & ~mask) - 1, out);
        split(last & ~mask, last, out);
        return;
      }
    }
  }
  std::vector<ByteRange> sequence;
  for (size_t i = 0; i < low.size(); ++i) {
    sequence.push_back({static_cast<uint8_t>(low[i]), static_cast<uint8_t>(high[i])});
  }
  out.push_back(std::move(sequence));
}

}  // namespace

std::vector<std::vector<ByteRange>> utf8_byte_sequences(const std::vector<CodePointRange>& ranges) {
  std::vector<std::vector<ByteRange>> out;
  for (const CodePointRange& range : ranges) {
    split(range.first, range.last, out);
  }
  return out;
}

}  // namespace staticlm
