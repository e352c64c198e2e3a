// SPDX-License-Identifier: Apache-2.0
// converted_float_source: values converted on read (round to nearest even, NaN kept), a source
// that is not a whole number of values or a dtype that is not a plain float refused by name.
#include "staticlm/core/float_convert.h"

#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

#include "staticlm/core/half.h"

namespace staticlm {
namespace {

std::shared_ptr<ByteSource> f32_source(const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return make_owned_source(std::move(bytes));
}

TEST(FloatConvertTest, ConvertsF32ToBf16AndBack) {
  const std::vector<float> values = {1.0f, -2.5f, 1.00390625f /* halfway: rounds to even */, 3.0e38f,
                                     std::numeric_limits<float>::quiet_NaN()};
  auto to_bf16 = converted_float_source(f32_source(values), DType::kF32, DType::kBF16, "w");
  ASSERT_TRUE(to_bf16.ok()) << to_bf16.status().to_string();
  ASSERT_EQ((*to_bf16)->size_bytes(), values.size() * 2);
  std::vector<uint16_t> bits(values.size());
  ASSERT_TRUE((*to_bf16)->read(std::span(reinterpret_cast<uint8_t*>(bits.data()), bits.size() * 2)).ok());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(bits[i], f32_to_bf16(values[i])) << i;
  }
  EXPECT_EQ(bf16_to_f32(bits[2]), 1.0f);
  EXPECT_TRUE(std::isnan(bf16_to_f32(bits[4])));

  auto back = converted_float_source(*to_bf16, DType::kBF16, DType::kF32, "w");
  ASSERT_TRUE(back.ok());
  std::vector<float> widened(values.size());
  ASSERT_TRUE((*back)->read(std::span(reinterpret_cast<uint8_t*>(widened.data()), widened.size() * 4)).ok());
  EXPECT_EQ(widened[0], 1.0f);
  EXPECT_EQ(widened[1], -2.5f);
}

TEST(FloatConvertTest, ConvertsF32ToF16) {
  auto to_f16 = converted_float_source(f32_source({0.5f, 65504.0f}), DType::kF32, DType::kF16, "w");
  ASSERT_TRUE(to_f16.ok());
  std::vector<uint16_t> bits(2);
  ASSERT_TRUE((*to_f16)->read(std::span(reinterpret_cast<uint8_t*>(bits.data()), 4)).ok());
  EXPECT_EQ(f16_to_f32(bits[0]), 0.5f);
  EXPECT_EQ(f16_to_f32(bits[1]), 65504.0f);
}

TEST(FloatConvertTest, RefusesWhatItCannotConvert) {
  auto odd = converted_float_source(make_owned_source({1, 2, 3}), DType::kF32, DType::kBF16, "layers.0.w");
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.status().code(), StatusCode::kInvalidArgument);
  EXPECT_PRED_FORMAT2(::testing::IsSubstring, "tensor 'layers.0.w': 3 bytes is not a whole number of f32 values",
                      odd.status().message());
  auto to_int = converted_float_source(f32_source({1.0f}), DType::kF32, DType::kI8, "w");
  ASSERT_FALSE(to_int.ok());
  EXPECT_PRED_FORMAT2(::testing::IsSubstring, "cannot convert f32 to i8", to_int.status().message());
  auto short_read = converted_float_source(f32_source({1.0f, 2.0f}), DType::kF32, DType::kBF16, "w");
  ASSERT_TRUE(short_read.ok());
  std::vector<uint8_t> out(3);
  EXPECT_EQ((*short_read)->read(out).code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace staticlm
