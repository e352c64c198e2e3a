// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/checked_math.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

TEST(CheckedMathTest, Add) {
  EXPECT_EQ(checked_add(2, 3), std::optional<uint64_t>(5));
  EXPECT_EQ(checked_add(kMax, 0), std::optional<uint64_t>(kMax));
  EXPECT_EQ(checked_add(kMax - 1, 1), std::optional<uint64_t>(kMax));
  EXPECT_EQ(checked_add(kMax, 1), std::nullopt);
  EXPECT_EQ(checked_add(1, kMax), std::nullopt);
  EXPECT_EQ(checked_add(kMax, kMax), std::nullopt);
  EXPECT_EQ(checked_add(uint64_t{1} << 63, uint64_t{1} << 63), std::nullopt);
}

TEST(CheckedMathTest, Mul) {
  EXPECT_EQ(checked_mul(6, 7), std::optional<uint64_t>(42));
  EXPECT_EQ(checked_mul(kMax, 0), std::optional<uint64_t>(0));
  EXPECT_EQ(checked_mul(0, kMax), std::optional<uint64_t>(0));
  EXPECT_EQ(checked_mul(kMax, 1), std::optional<uint64_t>(kMax));
  EXPECT_EQ(checked_mul(kMax, 2), std::nullopt);
  EXPECT_EQ(checked_mul(uint64_t{1} << 32, uint64_t{1} << 32), std::nullopt);
  EXPECT_EQ(checked_mul(uint64_t{1} << 32, (uint64_t{1} << 32) - 1), std::optional<uint64_t>(kMax - 0xffffffffu));
  // 2^64 - 1 = 3 * 5 * 17 * 257 * 641 * 65537 * 6700417: an exact product at the very edge.
  EXPECT_EQ(checked_mul(3 * 5 * 17 * 257 * 641ull, 65537ull * 6700417ull), std::optional<uint64_t>(kMax));
}

TEST(CheckedMathTest, AlignUp) {
  EXPECT_EQ(checked_align_up(0, 64), std::optional<uint64_t>(0));
  EXPECT_EQ(checked_align_up(1, 64), std::optional<uint64_t>(64));
  EXPECT_EQ(checked_align_up(63, 64), std::optional<uint64_t>(64));
  EXPECT_EQ(checked_align_up(64, 64), std::optional<uint64_t>(64));
  EXPECT_EQ(checked_align_up(65, 64), std::optional<uint64_t>(128));
  EXPECT_EQ(checked_align_up(13, 1), std::optional<uint64_t>(13));
  EXPECT_EQ(checked_align_up(5, 8), std::optional<uint64_t>(8));
  // The last aligned value below 2^64 is reachable; anything above it overflows.
  const uint64_t last_aligned = kMax - 63;
  EXPECT_EQ(checked_align_up(last_aligned, 64), std::optional<uint64_t>(last_aligned));
  EXPECT_EQ(checked_align_up(last_aligned - 1, 64), std::optional<uint64_t>(last_aligned));
  EXPECT_EQ(checked_align_up(last_aligned + 1, 64), std::nullopt);
  EXPECT_EQ(checked_align_up(kMax, 64), std::nullopt);
  EXPECT_EQ(checked_align_up(kMax, 1), std::optional<uint64_t>(kMax));
}

TEST(CheckedMathTest, IsPowerOfTwo) {
  EXPECT_FALSE(is_power_of_two(0));
  EXPECT_FALSE(is_power_of_two(3));
  EXPECT_FALSE(is_power_of_two(6));
  EXPECT_FALSE(is_power_of_two(kMax));
  EXPECT_FALSE(is_power_of_two((uint64_t{1} << 63) + 1));
  for (int shift = 0; shift < 64; ++shift) {
    EXPECT_TRUE(is_power_of_two(uint64_t{1} << shift)) << shift;
  }
}

TEST(CheckedMathTest, NumElements) {
  EXPECT_EQ(checked_num_elements(std::vector<int64_t>{}), std::optional<uint64_t>(1));
  EXPECT_EQ(checked_num_elements(std::vector<int64_t>{2, 3, 4}), std::optional<uint64_t>(24));
  EXPECT_EQ(checked_num_elements(std::vector<int64_t>{7, 0, 9}), std::optional<uint64_t>(0));
  EXPECT_EQ(checked_num_elements(std::vector<int64_t>{-1}), std::nullopt);
  EXPECT_EQ(checked_num_elements(std::vector<int64_t>{4, -2, 3}), std::nullopt);
  // A zero does not mask a negative dimension that comes after it.
  EXPECT_EQ(checked_num_elements(std::vector<int64_t>{0, -1}), std::nullopt);
  EXPECT_EQ(checked_num_elements(std::vector<int64_t>{std::numeric_limits<int64_t>::min()}), std::nullopt);
  const int64_t int64_max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(checked_num_elements(std::vector<int64_t>{int64_max}), std::optional<uint64_t>(int64_max));
  EXPECT_EQ(checked_num_elements(std::vector<int64_t>{int64_max, 2}), std::optional<uint64_t>(kMax - 1));
  EXPECT_EQ(checked_num_elements(std::vector<int64_t>{int64_max, 3}), std::nullopt);
  EXPECT_EQ(checked_num_elements(std::vector<int64_t>{int64_t{1} << 32, int64_t{1} << 32}), std::nullopt);
}

TEST(CheckedMathTest, RangeFits) {
  EXPECT_TRUE(range_fits(0, 0, 0));
  EXPECT_TRUE(range_fits(0, 10, 10));
  EXPECT_TRUE(range_fits(10, 0, 10));
  EXPECT_TRUE(range_fits(4, 6, 10));
  EXPECT_FALSE(range_fits(4, 7, 10));
  EXPECT_FALSE(range_fits(11, 0, 10));
  EXPECT_FALSE(range_fits(0, 11, 10));
  EXPECT_TRUE(range_fits(kMax, 0, kMax));
  EXPECT_TRUE(range_fits(0, kMax, kMax));
  EXPECT_TRUE(range_fits(1, kMax - 1, kMax));
  // offset + size wraps around: must not be mistaken for a small end.
  EXPECT_FALSE(range_fits(kMax, 1, kMax));
  EXPECT_FALSE(range_fits(2, kMax, kMax));
  EXPECT_FALSE(range_fits(kMax, kMax, kMax));
  EXPECT_FALSE(range_fits(uint64_t{1} << 63, uint64_t{1} << 63, 100));
}

}  // namespace
}  // namespace staticlm
