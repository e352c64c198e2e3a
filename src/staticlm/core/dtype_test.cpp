// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/dtype.h"

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

using ::testing::IsSubstring;

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

// The file format pins these codes; the expected values are written out independently of the table.
TEST(DTypeTest, EnumValuesArePinned) {
  EXPECT_EQ(static_cast<uint8_t>(DType::kF32), 0);
  EXPECT_EQ(static_cast<uint8_t>(DType::kF16), 1);
  EXPECT_EQ(static_cast<uint8_t>(DType::kBF16), 2);
  EXPECT_EQ(static_cast<uint8_t>(DType::kI8), 3);
  EXPECT_EQ(static_cast<uint8_t>(DType::kU8), 4);
  EXPECT_EQ(static_cast<uint8_t>(DType::kI32), 5);
  EXPECT_EQ(static_cast<uint8_t>(DType::kI64), 6);
  EXPECT_EQ(static_cast<uint8_t>(DType::kBool), 7);
  EXPECT_EQ(static_cast<uint8_t>(DType::kQ8_0), 16);
  EXPECT_EQ(static_cast<uint8_t>(DType::kQ4_0), 17);
}

TEST(DTypeTest, TableIsInEnumOrderWithUniqueNames) {
  std::span<const DTypeInfo> table = all_dtypes();
  ASSERT_EQ(table.size(), 10u);
  std::set<std::string_view> names;
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_TRUE(names.insert(table[i].name).second) << "duplicate name " << table[i].name;
    if (i > 0) {
      EXPECT_LT(static_cast<uint8_t>(table[i - 1].dtype), static_cast<uint8_t>(table[i].dtype));
    }
    EXPECT_GE(table[i].block_elements, 1u);
    EXPECT_GE(table[i].block_bytes, 1u);
    EXPECT_EQ(table[i].is_quantized, table[i].block_elements > 1) << table[i].name;
  }
}

TEST(DTypeTest, NamesAndSizesMatchSpec) {
  struct Expected {
    DType dtype;
    const char* name;
    uint64_t element_bytes;
    bool is_float;
    bool is_integer;
  };
  const std::vector<Expected> plain = {
      {DType::kF32, "f32", 4, true, false},   {DType::kF16, "f16", 2, true, false},
      {DType::kBF16, "bf16", 2, true, false}, {DType::kI8, "i8", 1, false, true},
      {DType::kU8, "u8", 1, false, true},     {DType::kI32, "i32", 4, false, true},
      {DType::kI64, "i64", 8, false, true},   {DType::kBool, "bool", 1, false, false},
  };
  for (const Expected& e : plain) {
    const DTypeInfo& info = dtype_info(e.dtype);
    EXPECT_EQ(info.dtype, e.dtype);
    EXPECT_EQ(info.name, e.name);
    EXPECT_EQ(dtype_name(e.dtype), e.name);
    EXPECT_EQ(info.block_elements, 1u);
    EXPECT_EQ(info.block_bytes, e.element_bytes);
    EXPECT_EQ(info.is_float, e.is_float) << e.name;
    EXPECT_EQ(info.is_integer, e.is_integer) << e.name;
    EXPECT_FALSE(info.is_quantized);
    Result<uint64_t> bytes = dtype_bytes(e.dtype, 3);
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(*bytes, 3 * e.element_bytes);
  }
  // Block layouts: 32 int8 + f16 scale = 34; 32 nibbles (16 bytes) + f16 scale = 18.
  EXPECT_EQ(dtype_name(DType::kQ8_0), "q8_0");
  EXPECT_EQ(dtype_info(DType::kQ8_0).block_elements, 32u);
  EXPECT_EQ(dtype_info(DType::kQ8_0).block_bytes, 34u);
  EXPECT_TRUE(dtype_info(DType::kQ8_0).is_quantized);
  EXPECT_EQ(dtype_name(DType::kQ4_0), "q4_0");
  EXPECT_EQ(dtype_info(DType::kQ4_0).block_elements, 32u);
  EXPECT_EQ(dtype_info(DType::kQ4_0).block_bytes, 18u);
}

TEST(DTypeTest, NameRoundTrip) {
  for (const DTypeInfo& info : all_dtypes()) {
    Result<DType> parsed = parse_dtype(info.name);
    ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
    EXPECT_EQ(*parsed, info.dtype);
    EXPECT_EQ(dtype_name(*parsed), info.name);
  }
}

TEST(DTypeTest, ParseUnknownListsKnownNames) {
  for (const char* bad : {"float32", "F32", "", "q8", "f32 "}) {
    Result<DType> parsed = parse_dtype(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    const std::string& message = parsed.status().message();
    EXPECT_PRED_FORMAT2(IsSubstring, std::string("unknown dtype '") + bad + "'", message);
    for (const DTypeInfo& info : all_dtypes()) {
      EXPECT_PRED_FORMAT2(IsSubstring, std::string(info.name), message);
    }
  }
  Result<DType> parsed = parse_dtype("float32");
  EXPECT_PRED_FORMAT2(IsSubstring, "f32, f16, bf16, i8, u8, i32, i64, bool, q8_0, q4_0", parsed.status().message());
}

TEST(DTypeTest, FindDtypeByCode) {
  for (uint32_t code = 0; code < 256; ++code) {
    const DTypeInfo* info = find_dtype(static_cast<uint8_t>(code));
    const bool known = code <= 7 || code == 16 || code == 17;
    if (known) {
      ASSERT_NE(info, nullptr) << code;
      EXPECT_EQ(static_cast<uint32_t>(info->dtype), code);
    } else {
      EXPECT_EQ(info, nullptr) << code;
    }
  }
}

TEST(DTypeTest, BlockBytes) {
  Result<uint64_t> bytes = dtype_bytes(DType::kQ8_0, 64);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, 68u);
  bytes = dtype_bytes(DType::kQ4_0, 96);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, 54u);
  bytes = dtype_bytes(DType::kQ8_0, 0);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, 0u);
}

TEST(DTypeTest, PartialBlockRefused) {
  for (uint64_t elements : {1u, 31u, 33u, 63u}) {
    Result<uint64_t> bytes = dtype_bytes(DType::kQ8_0, elements);
    ASSERT_FALSE(bytes.ok()) << elements;
    EXPECT_EQ(bytes.status().code(), StatusCode::kInvalidArgument);
  }
  Result<uint64_t> bytes = dtype_bytes(DType::kQ8_0, 33);
  EXPECT_PRED_FORMAT2(IsSubstring, "33 elements of q8_0", bytes.status().message());
  EXPECT_PRED_FORMAT2(IsSubstring, "32-element blocks", bytes.status().message());
  bytes = dtype_bytes(DType::kQ4_0, 40);
  EXPECT_PRED_FORMAT2(IsSubstring, "40 elements of q4_0", bytes.status().message());
}

TEST(DTypeTest, ByteOverflowRefused) {
  Result<uint64_t> ok = dtype_bytes(DType::kU8, kU64Max);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, kU64Max);

  Result<uint64_t> bytes = dtype_bytes(DType::kF32, kU64Max / 4 + 1);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kOutOfRange);
  EXPECT_PRED_FORMAT2(IsSubstring, "f32 overflow a 64-bit byte size", bytes.status().message());
  ok = dtype_bytes(DType::kF32, kU64Max / 4);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, (kU64Max / 4) * 4);

  // The largest whole number of blocks; 34 bytes per block overflows long before.
  bytes = dtype_bytes(DType::kQ8_0, kU64Max - kU64Max % 32);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kOutOfRange);
}

TEST(DTypeTest, TensorBytes) {
  const std::vector<int64_t> shape = {2, 3, 4};
  Result<uint64_t> bytes = tensor_bytes(DType::kF16, shape);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, 2u * 3 * 4 * 2);

  bytes = tensor_bytes(DType::kI64, std::vector<int64_t>{});  // a scalar
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, 8u);

  bytes = tensor_bytes(DType::kF32, std::vector<int64_t>{5, 0, 7});
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, 0u);

  bytes = tensor_bytes(DType::kQ8_0, std::vector<int64_t>{4, 64});
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, 4u * 68);
}

TEST(DTypeTest, TensorBytesNegativeDimRefused) {
  Result<uint64_t> bytes = tensor_bytes(DType::kF32, std::vector<int64_t>{2, -1, 4});
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kInvalidArgument);
  EXPECT_PRED_FORMAT2(IsSubstring, "shape [2,-1,4] has a negative dimension", bytes.status().message());
  // A zero dimension elsewhere does not hide a negative one.
  bytes = tensor_bytes(DType::kF32, std::vector<int64_t>{0, -5});
  EXPECT_EQ(bytes.status().code(), StatusCode::kInvalidArgument);
}

TEST(DTypeTest, TensorBytesOverflowRefused) {
  const int64_t big = int64_t{1} << 32;
  Result<uint64_t> bytes = tensor_bytes(DType::kU8, std::vector<int64_t>{big, big});
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kOutOfRange);
  EXPECT_PRED_FORMAT2(IsSubstring, "shape [4294967296,4294967296] has more elements than fit in 64 bits",
                      bytes.status().message());

  // Elements fit, bytes do not.
  bytes = tensor_bytes(DType::kF32, std::vector<int64_t>{int64_t{1} << 62});
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kOutOfRange);
  EXPECT_PRED_FORMAT2(IsSubstring, "overflow a 64-bit byte size", bytes.status().message());

  // Quantized shapes must be whole blocks.
  bytes = tensor_bytes(DType::kQ4_0, std::vector<int64_t>{3, 11});
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kInvalidArgument);
  EXPECT_PRED_FORMAT2(IsSubstring, "33 elements of q4_0", bytes.status().message());
}

}  // namespace
}  // namespace staticlm
