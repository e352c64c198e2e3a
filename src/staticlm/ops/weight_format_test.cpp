// SPDX-License-Identifier: Apache-2.0
#include "staticlm/ops/weight_format.h"

#include <gtest/gtest.h>

namespace staticlm {
namespace {

TEST(WeightFormatTest, NamesRoundTripAndCountTheScalesInTheirBits) {
  for (std::string_view name : {"f32", "bf16", "q4_0", "int8_g32", "int4_g128", "int8_g16"}) {
    auto format = WeightFormat::parse(name);
    ASSERT_TRUE(format.ok()) << format.status().message();
    EXPECT_EQ(format->name(), name);
  }
  // The same bits as llama.cpp's q8_0 and q4_0 at group 32.
  EXPECT_DOUBLE_EQ(WeightFormat::parse("int8_g32")->bits_per_weight(), 8.5);
  EXPECT_DOUBLE_EQ(WeightFormat::parse("int4_g32")->bits_per_weight(), 4.5);
  EXPECT_DOUBLE_EQ(WeightFormat::parse("q8_0")->bits_per_weight(), 8.5);
  EXPECT_DOUBLE_EQ(WeightFormat::parse("int4_g128")->bits_per_weight(), 4.125);
  EXPECT_DOUBLE_EQ(WeightFormat::parse("bf16")->bits_per_weight(), 16.0);
}

TEST(WeightFormatTest, RefusesUnknownNamesAndGroups) {
  for (std::string_view name : {"int8_g48", "int8_g", "int4_g32x", "int2_g32", ""}) {
    auto format = WeightFormat::parse(name);
    ASSERT_FALSE(format.ok()) << name;
    EXPECT_NE(format.status().message().find(str_cat("weight format '", name, "'")), std::string::npos)
        << format.status().message();
  }
}

}  // namespace
}  // namespace staticlm
