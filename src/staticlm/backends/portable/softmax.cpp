// SPDX-License-Identifier: Apache-2.0
// softmax along one axis, max-subtracted so that large inputs do not overflow. The input is
// viewed as [outer, axis, inner]; each of the outer * inner lanes is normalized separately.
#include <algorithm>
#include <cmath>

#include "staticlm/backends/portable/kernel_factories.h"

namespace staticlm::portable {
namespace {

class SoftmaxKernel final : public Kernel {
 public:
  SoftmaxKernel(int64_t outer, int64_t axis_len, int64_t inner) : outer_(outer), axis_len_(axis_len), inner_(inner) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext&) const override {
    const float* x = inputs[0].data<float>();
    float* out = outputs[0].data<float>();
    if (axis_len_ == 0) {
      return ok_status();
    }
    for (int64_t o = 0; o < outer_; ++o) {
      for (int64_t i = 0; i < inner_; ++i) {
        const int64_t base = o * axis_len_ * inner_ + i;
        float max_value = x[base];
        for (int64_t a = 1; a < axis_len_; ++a) {
          max_value = std::max(max_value, x[base + a * inner_]);
        }
        float total = 0.0f;
        for (int64_t a = 0; a < axis_len_; ++a) {
          const float e = std::exp(x[base + a * inner_] - max_value);
          out[base + a * inner_] = e;
          total += e;
        }
        for (int64_t a = 0; a < axis_len_; ++a) {
          out[base + a * inner_] /= total;
        }
      }
    }
    return ok_status();
  }

 private:
  int64_t outer_;
  int64_t axis_len_;
  int64_t inner_;
};

}  // namespace

KernelResult make_softmax_kernel(const KernelSignature& signature) {
  STATICLM_RETURN_IF_ERROR(check_signature(signature, 1, 1));
  const TensorSpec& x = *signature.inputs[0];
  if (x.dtype != DType::kF32 || x.shape.empty()) {
    return invalid_argument("softmax: expected an f32 input of rank >= 1, found ", dtype_name(x.dtype),
                            shape_string(x.shape));
  }
  STATICLM_ASSIGN_OR_RETURN(const size_t axis, read_axis(signature, "axis", -1, x.shape.size()));
  const std::span<const int64_t> dims(x.shape);
  return std::make_unique<SoftmaxKernel>(num_elements(dims.first(axis)), x.shape[axis],
                                         num_elements(dims.subspan(axis + 1)));
}

}  // namespace staticlm::portable
