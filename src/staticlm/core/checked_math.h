// SPDX-License-Identifier: Apache-2.0
// Overflow-checked size arithmetic for every offset and size that comes from untrusted input.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace staticlm {

// Each returns std::nullopt when the exact result does not fit in uint64_t.
inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) {
    return std::nullopt;
  }
  return out;
}

inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) {
    return std::nullopt;
  }
  return out;
}

// Rounds value up to a multiple of alignment (a power of two); nullopt on overflow.
inline std::optional<uint64_t> checked_align_up(uint64_t value, uint64_t alignment) {
  auto bumped = checked_add(value, alignment - 1);
  if (!bumped) {
    return std::nullopt;
  }
  return *bumped & ~(alignment - 1);
}

inline bool is_power_of_two(uint64_t value) {
  return value != 0 && (value & (value - 1)) == 0;
}

// Product of the dimensions; nullopt when a dimension is negative or the product overflows.
inline std::optional<uint64_t> checked_num_elements(std::span<const int64_t> shape) {
  uint64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0) {
      return std::nullopt;
    }
    auto next = checked_mul(count, static_cast<uint64_t>(dim));
    if (!next) {
      return std::nullopt;
    }
    count = *next;
  }
  return count;
}

// True when [offset, offset + size) lies inside [0, limit).
inline bool range_fits(uint64_t offset, uint64_t size, uint64_t limit) {
  auto end = checked_add(offset, size);
  return end && *end <= limit;
}

}  // namespace staticlm
