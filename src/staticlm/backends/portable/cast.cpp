// SPDX-License-Identifier: Apache-2.0
// cast between f32, f16, bf16, i32 and i64. Float sources are read as f32 and integer sources
// as i64, then written in the target dtype: float to integer truncates toward zero and
// saturates at the target's range (NaN becomes 0), so no input is undefined behaviour; integer
// to integer wraps modulo 2^32 when narrowing; anything to f16 / bf16 rounds to nearest even.
#include <cmath>
#include <cstring>
#include <limits>

#include "staticlm/backends/portable/element_access.h"
#include "staticlm/backends/portable/kernel_factories.h"

namespace staticlm::portable {
namespace {

bool is_castable(DType dtype) {
  return is_float_weight_dtype(dtype) || is_index_dtype(dtype);
}

template <typename Int>
Int float_to_int(float value) {
  if (std::isnan(value)) {
    return 0;
  }
  // The bounds are powers of two (exact in float); max + 1 is the first value out of range.
  constexpr auto kLow = static_cast<float>(std::numeric_limits<Int>::min());
  constexpr float kHighExclusive = -kLow;
  if (value < kLow) {
    return std::numeric_limits<Int>::min();
  }
  if (value >= kHighExclusive) {
    return std::numeric_limits<Int>::max();
  }
  return static_cast<Int>(value);
}

void store_float(float value, DType dtype, void* out, int64_t index) {
  switch (dtype) {
    case DType::kF16: static_cast<uint16_t*>(out)[index] = f32_to_f16(value); break;
    case DType::kBF16: static_cast<uint16_t*>(out)[index] = f32_to_bf16(value); break;
    case DType::kI32: static_cast<int32_t*>(out)[index] = float_to_int<int32_t>(value); break;
    case DType::kI64: static_cast<int64_t*>(out)[index] = float_to_int<int64_t>(value); break;
    default: static_cast<float*>(out)[index] = value; break;
  }
}

void store_int(int64_t value, DType dtype, void* out, int64_t index) {
  switch (dtype) {
    case DType::kI32: static_cast<int32_t*>(out)[index] = static_cast<int32_t>(value); break;
    case DType::kI64: static_cast<int64_t*>(out)[index] = value; break;
    default: store_float(static_cast<float>(value), dtype, out, index); break;
  }
}

class CastKernel final : public Kernel {
 public:
  CastKernel(DType from, DType to, int64_t count, uint64_t bytes)
      : from_(from), to_(to), count_(count), bytes_(bytes) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext&) const override {
    const void* in = inputs[0].raw();
    void* out = outputs[0].raw();
    if (from_ == to_) {
      if (bytes_ > 0 && in != out) {
        std::memmove(out, in, static_cast<size_t>(bytes_));
      }
      return ok_status();
    }
    // The dtype pair is fixed per kernel, so the branches below predict perfectly.
    if (is_index_dtype(from_)) {
      for (int64_t i = 0; i < count_; ++i) {
        store_int(load_index(in, from_, i), to_, out, i);
      }
    } else {
      for (int64_t i = 0; i < count_; ++i) {
        store_float(load_float(in, from_, i), to_, out, i);
      }
    }
    return ok_status();
  }

 private:
  DType from_;
  DType to_;
  int64_t count_;
  uint64_t bytes_;  // input size, for the same-dtype copy
};

}  // namespace

KernelResult make_cast_kernel(const KernelSignature& signature) {
  STATICLM_RETURN_IF_ERROR(check_signature(signature, 1, 1));
  const TensorSpec& x = *signature.inputs[0];
  const TensorSpec& out = signature.outputs[0];
  if (!is_castable(x.dtype) || !is_castable(out.dtype) || out.shape != x.shape) {
    return unimplemented("cast: ", dtype_name(x.dtype), shape_string(x.shape), " to ", dtype_name(out.dtype),
                         shape_string(out.shape),
                         " is not supported (expected f32, f16, bf16, i32 or i64, same shape)");
  }
  auto target_name = signature.attributes.get_string("dtype");
  if (!target_name.ok()) {
    return target_name.status().with_context("cast");
  }
  auto target = parse_dtype(*target_name);
  if (!target.ok() || *target != out.dtype) {
    return invalid_argument("cast: attribute 'dtype' is '", *target_name, "' but the output is ",
                            dtype_name(out.dtype));
  }
  STATICLM_ASSIGN_OR_RETURN(const uint64_t bytes, tensor_bytes(x.dtype, x.shape));
  return std::make_unique<CastKernel>(x.dtype, out.dtype, num_elements(x.shape), bytes);
}

}  // namespace staticlm::portable
