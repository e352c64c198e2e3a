// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/dtype.h"

#include <array>
#include <string>

#include "staticlm/core/checked_math.h"

namespace staticlm {
namespace {

constexpr std::array<DTypeInfo, 10> kDTypes = {{
    {DType::kF32, "f32", 1, 4, true, false, false},
    {DType::kF16, "f16", 1, 2, true, false, false},
    {DType::kBF16, "bf16", 1, 2, true, false, false},
    {DType::kI8, "i8", 1, 1, false, true, false},
    {DType::kU8, "u8", 1, 1, false, true, false},
    {DType::kI32, "i32", 1, 4, false, true, false},
    {DType::kI64, "i64", 1, 8, false, true, false},
    {DType::kBool, "bool", 1, 1, false, false, false},
    {DType::kQ8_0, "q8_0", 32, 34, false, false, true},
    {DType::kQ4_0, "q4_0", 32, 18, false, false, true},
}};

}  // namespace

std::span<const DTypeInfo> all_dtypes() {
  return kDTypes;
}

const DTypeInfo* find_dtype(uint8_t code) {
  for (const DTypeInfo& info : kDTypes) {
    if (static_cast<uint8_t>(info.dtype) == code) {
      return &info;
    }
  }
  return nullptr;
}

const DTypeInfo& dtype_info(DType dtype) {
  const DTypeInfo* info = find_dtype(static_cast<uint8_t>(dtype));
  // Every DType enumerator is in the table; an out-of-enum value can only come from a cast of
  // unchecked input, which callers must validate with find_dtype first.
  return info != nullptr ? *info : kDTypes[0];
}

Result<DType> parse_dtype(std::string_view name) {
  std::string known;
  for (const DTypeInfo& info : kDTypes) {
    if (info.name == name) {
      return info.dtype;
    }
    known += known.empty() ? "" : ", ";
    known += info.name;
  }
  return invalid_argument("unknown dtype '", name, "' (known: ", known, ")");
}

Result<uint64_t> dtype_bytes(DType dtype, uint64_t elements) {
  const DTypeInfo& info = dtype_info(dtype);
  if (elements % info.block_elements != 0) {
    return invalid_argument(elements, " elements of ", info.name, " is not a whole number of ", info.block_elements,
                            "-element blocks");
  }
  auto bytes = checked_mul(elements / info.block_elements, info.block_bytes);
  if (!bytes) {
    return out_of_range(elements, " elements of ", info.name, " overflow a 64-bit byte size");
  }
  return *bytes;
}

Result<uint64_t> tensor_bytes(DType dtype, std::span<const int64_t> shape) {
  for (int64_t dim : shape) {
    if (dim < 0) {
      return invalid_argument("shape ", shape_string(shape), " has a negative dimension");
    }
  }
  auto elements = checked_num_elements(shape);
  if (!elements) {
    return out_of_range("shape ", shape_string(shape), " has more elements than fit in 64 bits");
  }
  return dtype_bytes(dtype, *elements);
}

}  // namespace staticlm
