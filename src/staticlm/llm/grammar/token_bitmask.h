// SPDX-License-Identifier: Apache-2.0
// A set of token ids as bits: what a grammar allows next. The sampler reads it before sampling.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
#include <vector>

namespace staticlm {

class TokenBitmask {
 public:
  TokenBitmask() = default;
  explicit TokenBitmask(int32_t size) : size_(size), words_((static_cast<size_t>(size) + 63) / 64, 0) {}

  int32_t size() const { return size_; }
  bool test(int32_t id) const { return (words_[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1; }
  void set(int32_t id) { words_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63); }
  void clear() { std::fill(words_.begin(), words_.end(), 0); }
  void set_all(std::span<const uint64_t> words) {
    for (size_t i = 0; i < words_.size() && i < words.size(); ++i) {
      words_[i] |= words[i];
    }
  }
  bool any() const {
    return std::any_of(words_.begin(), words_.end(), [](uint64_t w) { return w != 0; });
  }
  int64_t count() const {
    int64_t total = 0;
    for (uint64_t w : words_) {
      total += std::popcount(w);
    }
    return total;
  }
  std::span<const uint64_t> words() const { return words_; }

 private:
  int32_t size_ = 0;
  std::vector<uint64_t> words_;
};

}  // namespace staticlm
