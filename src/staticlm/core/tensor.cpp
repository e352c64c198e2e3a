// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/tensor.h"

#include <utility>

namespace staticlm {

uint64_t TensorView::nbytes() const {
  auto bytes = tensor_bytes(dtype_, shape_);
  return bytes.ok() ? *bytes : 0;
}

Result<Tensor> Tensor::zeros(DType dtype, Shape shape) {
  STATICLM_ASSIGN_OR_RETURN(uint64_t bytes, tensor_bytes(dtype, shape));
  Tensor tensor;
  STATICLM_ASSIGN_OR_RETURN(tensor.buffer_, AlignedBuffer::allocate(bytes));
  tensor.dtype_ = dtype;
  tensor.shape_ = std::move(shape);
  return tensor;
}

}  // namespace staticlm
