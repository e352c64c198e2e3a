// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/half.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

// Every expectation here comes from the IEEE 754 definitions, evaluated in double, never from
// the conversions under test.
namespace staticlm {
namespace {

constexpr uint32_t kHalfCount = 1u << 16;
constexpr uint16_t kF16Sign = 0x8000u;
constexpr uint16_t kF16Inf = 0x7c00u;
constexpr uint16_t kF16MaxFinite = 0x7bffu;
constexpr uint16_t kBf16Inf = 0x7f80u;
constexpr uint16_t kBf16MaxFinite = 0x7f7fu;

bool f16_is_nan(uint16_t bits) {
  return (bits & 0x7c00u) == 0x7c00u && (bits & 0x3ffu) != 0;
}
bool bf16_is_nan(uint16_t bits) {
  return (bits & 0x7f80u) == 0x7f80u && (bits & 0x7fu) != 0;
}

// sign * 2^(e-15) * (1 + m/1024); subnormal sign * 2^-14 * m/1024.
double reference_f16_value(uint16_t bits) {
  const double sign = (bits & kF16Sign) != 0 ? -1.0 : 1.0;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  if (exponent == 0x1f) {
    return mantissa == 0 ? sign * std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  }
  if (exponent == 0) {
    return sign * std::ldexp(mantissa / 1024.0, -14);
  }
  return sign * std::ldexp(1.0 + mantissa / 1024.0, exponent - 15);
}

// sign * 2^(e-127) * (1 + m/128); subnormal sign * 2^-126 * m/128.
double reference_bf16_value(uint16_t bits) {
  const double sign = (bits & 0x8000u) != 0 ? -1.0 : 1.0;
  const int exponent = (bits >> 7) & 0xff;
  const int mantissa = bits & 0x7f;
  if (exponent == 0xff) {
    return mantissa == 0 ? sign * std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  }
  if (exponent == 0) {
    return sign * std::ldexp(mantissa / 128.0, -126);
  }
  return sign * std::ldexp(1.0 + mantissa / 128.0, exponent - 127);
}

// Value used for rounding decisions: the format's infinity counts as the next step past the
// largest finite value (2^16 for f16, 2^128 for bf16), as IEEE rounding does.
double f16_magnitude_for_rounding(uint16_t magnitude_bits) {
  return magnitude_bits == kF16Inf ? 65536.0 : reference_f16_value(magnitude_bits);
}
double bf16_magnitude_for_rounding(uint16_t magnitude_bits) {
  return magnitude_bits == kBf16Inf ? std::ldexp(1.0, 128) : reference_bf16_value(magnitude_bits);
}

// Round-to-nearest-even into f16, by search over the sorted positive finite halves.
uint16_t reference_f32_to_f16(float value) {
  if (std::isnan(value)) {
    return 0x7e00u;  // only NaN-ness is compared
  }
  const uint16_t sign = std::signbit(value) ? kF16Sign : 0;
  const double magnitude = std::fabs(static_cast<double>(value));
  // Positive halves are ordered like their bit patterns; find the first one >= magnitude.
  uint32_t low = 0;
  uint32_t high = kF16Inf;  // not found: the magnitude lies above 65504
  while (low < high) {
    const uint32_t mid = (low + high) / 2;
    if (f16_magnitude_for_rounding(static_cast<uint16_t>(mid)) < magnitude) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  const uint16_t above = static_cast<uint16_t>(low);
  if (above == 0 || f16_magnitude_for_rounding(above) == magnitude) {
    return static_cast<uint16_t>(sign | above);
  }
  if (magnitude > 65536.0) {
    return static_cast<uint16_t>(sign | kF16Inf);
  }
  const uint16_t below = static_cast<uint16_t>(above - 1);
  const double to_below = magnitude - f16_magnitude_for_rounding(below);
  const double to_above = f16_magnitude_for_rounding(above) - magnitude;
  uint16_t chosen = 0;
  if (to_below < to_above) {
    chosen = below;
  } else if (to_above < to_below) {
    chosen = above;
  } else {
    chosen = (below & 1u) == 0 ? below : above;
  }
  return static_cast<uint16_t>(sign | chosen);
}

void expect_same_float(float actual, double expected, uint32_t bits) {
  if (std::isnan(expected)) {
    EXPECT_TRUE(std::isnan(actual)) << "bits 0x" << std::hex << bits;
    return;
  }
  EXPECT_EQ(static_cast<double>(actual), expected) << "bits 0x" << std::hex << bits;
  EXPECT_EQ(std::signbit(actual), std::signbit(expected)) << "bits 0x" << std::hex << bits;
}

// --- f16 ---

TEST(HalfTest, F16ToF32MatchesDefinitionForEveryPattern) {
  for (uint32_t bits = 0; bits < kHalfCount; ++bits) {
    const uint16_t half = static_cast<uint16_t>(bits);
    const float actual = f16_to_f32(half);
    expect_same_float(actual, reference_f16_value(half), bits);
    if (f16_is_nan(half)) {
      EXPECT_EQ(std::signbit(actual), (half & kF16Sign) != 0) << std::hex << bits;
    }
  }
}

TEST(HalfTest, F16ToF32KnownValues) {
  EXPECT_EQ(f16_to_f32(0x3c00u), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000u), -2.0f);
  EXPECT_EQ(f16_to_f32(0x7bffu), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0400u), std::ldexp(1.0f, -14));
  EXPECT_EQ(f16_to_f32(0x0001u), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_f32(0x3555u), 0.333251953125f);
  EXPECT_TRUE(std::isinf(f16_to_f32(kF16Inf)));
  EXPECT_TRUE(std::signbit(f16_to_f32(0x8000u)));
}

TEST(HalfTest, F32ToF16RoundTripsEveryFiniteHalf) {
  for (uint32_t bits = 0; bits < kHalfCount; ++bits) {
    const uint16_t half = static_cast<uint16_t>(bits);
    const double value = reference_f16_value(half);
    if (std::isnan(value)) {
      continue;
    }
    EXPECT_EQ(f32_to_f16(static_cast<float>(value)), half) << "bits 0x" << std::hex << bits;
  }
}

TEST(HalfTest, F32ToF16RoundsMidpointsToEven) {
  for (uint32_t below = 0; below < kF16Inf; ++below) {
    const uint16_t low = static_cast<uint16_t>(below);
    const uint16_t high = static_cast<uint16_t>(below + 1);
    // 11 significant bits plus one fits a float exactly.
    const double midpoint = (f16_magnitude_for_rounding(low) + f16_magnitude_for_rounding(high)) / 2;
    const float mid = static_cast<float>(midpoint);
    ASSERT_EQ(static_cast<double>(mid), midpoint);
    const uint16_t even = (low & 1u) == 0 ? low : high;
    const float just_below = std::nextafter(mid, 0.0f);
    const float just_above = std::nextafter(mid, std::numeric_limits<float>::infinity());
    for (uint16_t sign : {uint16_t{0}, kF16Sign}) {
      const float s = sign != 0 ? -1.0f : 1.0f;
      EXPECT_EQ(f32_to_f16(s * mid), sign | even) << "midpoint after 0x" << std::hex << below;
      EXPECT_EQ(f32_to_f16(s * just_below), sign | low) << "below midpoint after 0x" << std::hex << below;
      EXPECT_EQ(f32_to_f16(s * just_above), sign | high) << "above midpoint after 0x" << std::hex << below;
    }
  }
}

TEST(HalfTest, F32ToF16Overflow) {
  EXPECT_EQ(f32_to_f16(65504.0f), kF16MaxFinite);
  EXPECT_EQ(f32_to_f16(65519.996f), kF16MaxFinite);
  EXPECT_EQ(f32_to_f16(65520.0f), kF16Inf);  // the midpoint ties to the even pattern, infinity
  EXPECT_EQ(f32_to_f16(1e10f), kF16Inf);
  EXPECT_EQ(f32_to_f16(-1e10f), kF16Sign | kF16Inf);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::max()), kF16Inf);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), kF16Inf);
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::infinity()), kF16Sign | kF16Inf);
}

TEST(HalfTest, F32ToF16Tiny) {
  const float smallest_subnormal = std::ldexp(1.0f, -24);
  EXPECT_EQ(f32_to_f16(smallest_subnormal), 0x0001u);
  EXPECT_EQ(f32_to_f16(smallest_subnormal / 2), 0x0000u);  // tie to even zero
  EXPECT_EQ(f32_to_f16(std::nextafter(smallest_subnormal / 2, 1.0f)), 0x0001u);
  EXPECT_EQ(f32_to_f16(-smallest_subnormal / 2), 0x8000u);
  EXPECT_EQ(f32_to_f16(smallest_subnormal * 1.5f), 0x0002u);  // tie between 1 and 2 goes to 2
  EXPECT_EQ(f32_to_f16(1e-10f), 0x0000u);
  EXPECT_EQ(f32_to_f16(-1e-10f), 0x8000u);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::denorm_min()), 0x0000u);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::min()), 0x0000u);
  EXPECT_EQ(f32_to_f16(0.0f), 0x0000u);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000u);
  // The largest subnormal and the smallest normal, and the rounding between them.
  EXPECT_EQ(f32_to_f16(std::ldexp(1023.0f, -24)), 0x03ffu);
  EXPECT_EQ(f32_to_f16(std::ldexp(1023.5f, -24)), 0x0400u);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14)), 0x0400u);
}

TEST(HalfTest, F32ToF16NanStaysNan) {
  for (uint32_t float_bits : {0x7fc00000u, 0x7f800001u, 0x7fffffffu, 0x7f802000u, 0x7fa00000u}) {
    const uint16_t positive = f32_to_f16(std::bit_cast<float>(float_bits));
    EXPECT_TRUE(f16_is_nan(positive)) << std::hex << float_bits << " -> " << positive;
    EXPECT_EQ(positive & kF16Sign, 0u);
    const uint16_t negative = f32_to_f16(std::bit_cast<float>(float_bits | 0x80000000u));
    EXPECT_TRUE(f16_is_nan(negative)) << std::hex << float_bits << " -> " << negative;
    EXPECT_EQ(negative & kF16Sign, kF16Sign);
  }
  for (uint32_t bits = 0; bits < kHalfCount; ++bits) {
    const uint16_t half = static_cast<uint16_t>(bits);
    if (f16_is_nan(half)) {
      EXPECT_TRUE(f16_is_nan(f32_to_f16(f16_to_f32(half)))) << std::hex << bits;
    }
  }
}

TEST(HalfTest, F32ToF16MatchesReferenceOnSampledFloats) {
  // A stride that is odd and coprime with every power of two visits all exponents and low bits.
  constexpr uint64_t kStride = 4099;
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += kStride) {
    const float value = std::bit_cast<float>(static_cast<uint32_t>(bits));
    const uint16_t actual = f32_to_f16(value);
    if (std::isnan(value)) {
      EXPECT_TRUE(f16_is_nan(actual)) << std::hex << bits;
      continue;
    }
    ASSERT_EQ(actual, reference_f32_to_f16(value)) << "float bits 0x" << std::hex << bits;
  }
}

// --- bf16 ---

TEST(Bf16Test, Bf16ToF32MatchesDefinitionForEveryPattern) {
  for (uint32_t bits = 0; bits < kHalfCount; ++bits) {
    const uint16_t value = static_cast<uint16_t>(bits);
    expect_same_float(bf16_to_f32(value), reference_bf16_value(value), bits);
  }
  EXPECT_EQ(bf16_to_f32(0x3f80u), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xc040u), -3.0f);
}

TEST(Bf16Test, F32ToBf16RoundTripsEveryFiniteValue) {
  for (uint32_t bits = 0; bits < kHalfCount; ++bits) {
    const uint16_t value = static_cast<uint16_t>(bits);
    const double decoded = reference_bf16_value(value);
    if (std::isnan(decoded)) {
      continue;
    }
    EXPECT_EQ(f32_to_bf16(static_cast<float>(decoded)), value) << "bits 0x" << std::hex << bits;
  }
}

TEST(Bf16Test, F32ToBf16RoundsMidpointsToEven) {
  for (uint32_t below = 0; below < kBf16Inf; ++below) {
    const uint16_t low = static_cast<uint16_t>(below);
    const uint16_t high = static_cast<uint16_t>(below + 1);
    const double midpoint = (bf16_magnitude_for_rounding(low) + bf16_magnitude_for_rounding(high)) / 2;
    const float mid = static_cast<float>(midpoint);
    ASSERT_EQ(static_cast<double>(mid), midpoint);
    const uint16_t even = (low & 1u) == 0 ? low : high;
    const float just_below = std::nextafter(mid, 0.0f);
    const float just_above = std::nextafter(mid, std::numeric_limits<float>::infinity());
    for (uint16_t sign : {uint16_t{0}, uint16_t{0x8000u}}) {
      const float s = sign != 0 ? -1.0f : 1.0f;
      EXPECT_EQ(f32_to_bf16(s * mid), sign | even) << "midpoint after 0x" << std::hex << below;
      EXPECT_EQ(f32_to_bf16(s * just_below), sign | low) << "below midpoint after 0x" << std::hex << below;
      EXPECT_EQ(f32_to_bf16(s * just_above), sign | high) << "above midpoint after 0x" << std::hex << below;
    }
  }
}

TEST(Bf16Test, F32ToBf16OverflowAndSpecials) {
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), kBf16Inf);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::lowest()), 0x8000u | kBf16Inf);
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x7f7f7fffu)), kBf16MaxFinite);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::infinity()), kBf16Inf);
  EXPECT_EQ(f32_to_bf16(-std::numeric_limits<float>::infinity()), 0x8000u | kBf16Inf);
  EXPECT_EQ(f32_to_bf16(0.0f), 0x0000u);
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000u);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::denorm_min()), 0x0000u);
}

TEST(Bf16Test, F32ToBf16NanStaysNan) {
  // Payloads only in the 16 dropped bits would truncate to infinity without the quiet bit.
  for (uint32_t float_bits : {0x7fc00000u, 0x7f800001u, 0x7f80ffffu, 0x7fffffffu, 0x7f810000u}) {
    const uint16_t positive = f32_to_bf16(std::bit_cast<float>(float_bits));
    EXPECT_TRUE(bf16_is_nan(positive)) << std::hex << float_bits << " -> " << positive;
    EXPECT_EQ(positive & 0x8000u, 0u);
    const uint16_t negative = f32_to_bf16(std::bit_cast<float>(float_bits | 0x80000000u));
    EXPECT_TRUE(bf16_is_nan(negative)) << std::hex << float_bits << " -> " << negative;
    EXPECT_EQ(negative & 0x8000u, 0x8000u);
  }
}

}  // namespace
}  // namespace staticlm
