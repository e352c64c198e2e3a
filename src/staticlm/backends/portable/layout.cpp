// SPDX-License-Identifier: Apache-2.0
// Layout ops move bytes and never look at values, so one implementation serves every dtype:
// reshape copies the buffer (but the rows of a left-padded chunk's padding, where both shapes'
// first dimension other than 1 is the chunk's rows); transpose, slice and concat move whole elements of the dtype's
// byte size (block-quantized dtypes are refused for those three).
#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "staticlm/backends/portable/kernel_factories.h"

namespace staticlm::portable {
namespace {

// Copies unless the runtime bound both views to the same storage.
void copy_bytes(void* out, const void* in, uint64_t bytes) {
  if (out != in && bytes > 0) {
    std::memmove(out, in, static_cast<size_t>(bytes));
  }
}

// A shape's first dimension that is not 1 (its rows, in [1, seq, ...]); 1 where there is none.
int64_t leading_rows(const Shape& shape) {
  for (int64_t d : shape) {
    if (d != 1) {
      return d;
    }
  }
  return 1;
}

class ReshapeKernel final : public Kernel {
 public:
  ReshapeKernel(uint64_t bytes, const Shape& in, const Shape& out)
      : bytes_(bytes), in_rows_(leading_rows(in)), out_rows_(leading_rows(out)) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    // Where both shapes lead with the chunk's rows ([1, seq, heads, dim] -> [1, seq, hidden]),
    // the rows of its padding are not copied (their values are unspecified, docs/ops.md).
    uint64_t skipped = 0;
    if (context.padding_rows > 0 && in_rows_ == context.chunk_rows && out_rows_ == context.chunk_rows) {
      const int64_t padding = std::min(context.padding_rows, context.chunk_rows);
      skipped = bytes_ / static_cast<uint64_t>(context.chunk_rows) * static_cast<uint64_t>(padding);
    }
    copy_bytes(static_cast<uint8_t*>(outputs[0].raw()) + skipped,
               static_cast<const uint8_t*>(inputs[0].raw()) + skipped, bytes_ - skipped);
    return ok_status();
  }

 private:
  uint64_t bytes_;
  int64_t in_rows_;
  int64_t out_rows_;
};

// out[i0, ..., in] = x[...] where output axis a walks input axis perm[a].
template <typename Element>
class TransposeKernel final : public Kernel {
 public:
  TransposeKernel(Shape out_shape, std::vector<int64_t> in_strides)
      : out_shape_(std::move(out_shape)), in_strides_(std::move(in_strides)) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext&) const override {
    const Element* in = inputs[0].data<const Element>();
    Element* out = outputs[0].data<Element>();
    const int64_t total = num_elements(out_shape_);
    if (total == 0) {
      return ok_status();
    }
    const size_t last = out_shape_.size() - 1;
    const int64_t inner = out_shape_[last];
    const int64_t inner_stride = in_strides_[last];
    std::vector<int64_t> index(out_shape_.size(), 0);
    for (int64_t base = 0; base < total; base += inner) {
      int64_t offset = 0;
      for (size_t axis = 0; axis < last; ++axis) {
        offset += index[axis] * in_strides_[axis];
      }
      for (int64_t i = 0; i < inner; ++i) {
        out[base + i] = in[offset + i * inner_stride];
      }
      for (size_t axis = last; axis-- > 0;) {
        if (++index[axis] < out_shape_[axis]) {
          break;
        }
        index[axis] = 0;
      }
    }
    return ok_status();
  }

 private:
  Shape out_shape_;                  // at least rank 1
  std::vector<int64_t> in_strides_;  // input stride, in elements, of each output axis
};

// The input viewed as [outer, dim, inner_bytes]; output row j is input row start + j * step.
class SliceKernel final : public Kernel {
 public:
  SliceKernel(int64_t outer, int64_t dim, int64_t start, int64_t step, int64_t out_dim, uint64_t inner_bytes)
      : outer_(outer), dim_(dim), start_(start), step_(step), out_dim_(out_dim), inner_bytes_(inner_bytes) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext&) const override {
    if (inner_bytes_ == 0) {
      return ok_status();
    }
    const auto* in = static_cast<const uint8_t*>(inputs[0].raw());
    auto* out = static_cast<uint8_t*>(outputs[0].raw());
    for (int64_t o = 0; o < outer_; ++o) {
      for (int64_t j = 0; j < out_dim_; ++j) {
        const int64_t in_row = o * dim_ + start_ + j * step_;
        const int64_t out_row = o * out_dim_ + j;
        std::memcpy(out + out_row * inner_bytes_, in + in_row * inner_bytes_, inner_bytes_);
      }
    }
    return ok_status();
  }

 private:
  int64_t outer_;
  int64_t dim_;
  int64_t start_;
  int64_t step_;
  int64_t out_dim_;
  uint64_t inner_bytes_;
};

// Each input viewed as [outer, piece_bytes]; the output's outer rows are the pieces in order.
class ConcatKernel final : public Kernel {
 public:
  ConcatKernel(int64_t outer, std::vector<uint64_t> piece_bytes)
      : outer_(outer), piece_bytes_(std::move(piece_bytes)) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext&) const override {
    auto* out = static_cast<uint8_t*>(outputs[0].raw());
    for (int64_t o = 0; o < outer_; ++o) {
      for (size_t i = 0; i < piece_bytes_.size(); ++i) {
        if (piece_bytes_[i] == 0) {
          continue;
        }
        const auto* in = static_cast<const uint8_t*>(inputs[i].raw());
        std::memcpy(out, in + o * piece_bytes_[i], piece_bytes_[i]);
        out += piece_bytes_[i];
      }
    }
    return ok_status();
  }

 private:
  int64_t outer_;
  std::vector<uint64_t> piece_bytes_;
};

uint64_t element_bytes(DType dtype) {
  return dtype_info(dtype).block_bytes;
}

}  // namespace

KernelResult make_reshape_kernel(const KernelSignature& signature) {
  STATICLM_RETURN_IF_ERROR(check_signature(signature, 1, 1));
  const TensorSpec& x = *signature.inputs[0];
  const TensorSpec& out = signature.outputs[0];
  STATICLM_ASSIGN_OR_RETURN(const uint64_t in_bytes, tensor_bytes(x.dtype, x.shape));
  STATICLM_ASSIGN_OR_RETURN(const uint64_t out_bytes, tensor_bytes(out.dtype, out.shape));
  if (out.dtype != x.dtype || out_bytes != in_bytes) {
    return invalid_argument("reshape: output ", dtype_name(out.dtype), shape_string(out.shape),
                            " does not hold the same data as input ", dtype_name(x.dtype), shape_string(x.shape));
  }
  return std::make_unique<ReshapeKernel>(in_bytes, x.shape, out.shape);
}

KernelResult make_transpose_kernel(const KernelSignature& signature) {
  STATICLM_RETURN_IF_ERROR(check_signature(signature, 1, 1));
  const TensorSpec& x = *signature.inputs[0];
  STATICLM_RETURN_IF_ERROR(check_plain_dtype(signature, x.dtype));
  auto perm = signature.attributes.get_ints("perm");
  if (!perm.ok()) {
    return perm.status().with_context("transpose");
  }
  const size_t rank = x.shape.size();
  std::vector<bool> seen(rank, false);
  bool valid = perm->size() == rank;
  for (size_t i = 0; valid && i < rank; ++i) {
    const int64_t axis = (*perm)[i];
    valid = axis >= 0 && axis < static_cast<int64_t>(rank) && !seen[static_cast<size_t>(axis)];
    if (valid) {
      seen[static_cast<size_t>(axis)] = true;
    }
  }
  if (!valid) {
    return invalid_argument("transpose: attribute 'perm': ", shape_string(*perm), " is not a permutation of rank ",
                            rank);
  }
  std::vector<int64_t> in_strides(rank);
  int64_t stride = 1;
  for (size_t axis = rank; axis-- > 0;) {
    in_strides[axis] = stride;
    stride *= x.shape[axis];
  }
  Shape out_shape(rank);
  std::vector<int64_t> permuted_strides(rank);
  for (size_t i = 0; i < rank; ++i) {
    out_shape[i] = x.shape[static_cast<size_t>((*perm)[i])];
    permuted_strides[i] = in_strides[static_cast<size_t>((*perm)[i])];
  }
  if (out_shape.empty()) {  // a rank-0 transpose moves its single element
    out_shape.push_back(1);
    permuted_strides.push_back(1);
  }
  switch (element_bytes(x.dtype)) {
    case 1: return std::make_unique<TransposeKernel<uint8_t>>(std::move(out_shape), std::move(permuted_strides));
    case 2: return std::make_unique<TransposeKernel<uint16_t>>(std::move(out_shape), std::move(permuted_strides));
    case 4: return std::make_unique<TransposeKernel<uint32_t>>(std::move(out_shape), std::move(permuted_strides));
    case 8: return std::make_unique<TransposeKernel<uint64_t>>(std::move(out_shape), std::move(permuted_strides));
    default: break;
  }
  return unimplemented("transpose: dtype ", dtype_name(x.dtype),
                       " has an element size the portable backend does not move");
}

KernelResult make_slice_kernel(const KernelSignature& signature) {
  STATICLM_RETURN_IF_ERROR(check_signature(signature, 1, 1));
  const TensorSpec& x = *signature.inputs[0];
  STATICLM_RETURN_IF_ERROR(check_plain_dtype(signature, x.dtype));
  STATICLM_ASSIGN_OR_RETURN(const size_t axis, read_axis(signature, "axis", std::nullopt, x.shape.size()));
  const Attributes& attrs = signature.attributes;
  auto start = attrs.get_int("start");
  auto end = attrs.get_int("end");
  auto step = attrs.get_int_or("step", 1);
  for (const Result<int64_t>* value : {&start, &end, &step}) {
    if (!value->ok()) {
      return value->status().with_context("slice");
    }
  }
  const int64_t dim = x.shape[axis];
  if (*step <= 0 || *start < 0 || *end < *start || *end > dim) {
    return invalid_argument("slice: [", *start, ", ", *end, ") step ", *step, " is not a valid slice of axis ", axis,
                            " of ", shape_string(x.shape));
  }
  const std::span<const int64_t> dims(x.shape);
  const auto inner_bytes = static_cast<uint64_t>(num_elements(dims.subspan(axis + 1))) * element_bytes(x.dtype);
  const int64_t out_dim = (*end - *start + *step - 1) / *step;
  return std::make_unique<SliceKernel>(num_elements(dims.first(axis)), dim, *start, *step, out_dim, inner_bytes);
}

KernelResult make_concat_kernel(const KernelSignature& signature) {
  STATICLM_RETURN_IF_ERROR(check_signature(signature, 1, -1));
  const TensorSpec& first = *signature.inputs[0];
  STATICLM_RETURN_IF_ERROR(check_plain_dtype(signature, first.dtype));
  STATICLM_ASSIGN_OR_RETURN(const size_t axis, read_axis(signature, "axis", std::nullopt, first.shape.size()));
  const std::span<const int64_t> first_dims(first.shape);
  const int64_t outer = num_elements(first_dims.first(axis));
  std::vector<uint64_t> piece_bytes;
  for (size_t i = 0; i < signature.inputs.size(); ++i) {
    const TensorSpec* input = signature.inputs[i];
    bool compatible = input != nullptr && input->dtype == first.dtype && input->shape.size() == first.shape.size();
    for (size_t d = 0; compatible && d < first.shape.size(); ++d) {
      compatible = d == axis || input->shape[d] == first.shape[d];
    }
    if (!compatible) {
      return invalid_argument("concat: input ", i, " cannot be concatenated with input 0 ", dtype_name(first.dtype),
                              shape_string(first.shape), " along axis ", axis);
    }
    const std::span<const int64_t> dims(input->shape);
    piece_bytes.push_back(static_cast<uint64_t>(num_elements(dims.subspan(axis))) * element_bytes(first.dtype));
  }
  return std::make_unique<ConcatKernel>(outer, std::move(piece_bytes));
}

}  // namespace staticlm::portable
