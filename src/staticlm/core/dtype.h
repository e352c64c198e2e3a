// SPDX-License-Identifier: Apache-2.0
// Element types. The numeric values are part of the program file format: never renumber.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "staticlm/core/result.h"

namespace staticlm {

enum class DType : uint8_t {
  kF32 = 0,
  kF16 = 1,
  kBF16 = 2,
  kI8 = 3,
  kU8 = 4,
  kI32 = 5,
  kI64 = 6,
  kBool = 7,
  // Block-quantized types store `block_elements` values in `block_bytes` bytes.
  kQ8_0 = 16,  // 32 int8 values + one f16 scale
  kQ4_0 = 17,  // 32 4-bit values + one f16 scale
};

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  uint32_t block_elements;  // 1 for plain types
  uint32_t block_bytes;     // element size for plain types
  bool is_float;
  bool is_integer;
  bool is_quantized;
};

// Every dtype this build knows, in enum order.
std::span<const DTypeInfo> all_dtypes();

// Returns nullptr when `code` is not a known dtype (for values read from a file).
const DTypeInfo* find_dtype(uint8_t code);

const DTypeInfo& dtype_info(DType dtype);
inline std::string_view dtype_name(DType dtype) {
  return dtype_info(dtype).name;
}

// Parses "f32", "f16", "bf16", ... Fails with InvalidArgument listing the known names.
Result<DType> parse_dtype(std::string_view name);

// Byte size of `elements` values of `dtype`. Fails with InvalidArgument when a quantized
// dtype's element count is not a whole number of blocks, OutOfRange on overflow.
Result<uint64_t> dtype_bytes(DType dtype, uint64_t elements);

// Byte size of a tensor of `shape`; fails on negative dimensions or overflow.
Result<uint64_t> tensor_bytes(DType dtype, std::span<const int64_t> shape);

}  // namespace staticlm
