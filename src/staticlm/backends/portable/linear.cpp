// SPDX-License-Identifier: Apache-2.0
// linear: out[m, n] = sum_k x[m, k] * w[n, k] + bias[n]. Work is split over output columns:
// each chunk widens its weight rows to f32 once and reuses them for every input row.
#include <algorithm>
#include <utility>
#include <vector>

#include "staticlm/backends/portable/element_access.h"
#include "staticlm/backends/portable/kernel_factories.h"

namespace staticlm::portable {
namespace {

// Roughly how many multiply-adds a chunk should hold before it is worth a thread.
constexpr int64_t kMinChunkWork = 1 << 15;

float dot(const float* a, const float* b, int64_t count) {
  float sum = 0.0f;
  for (int64_t i = 0; i < count; ++i) {
    sum += a[i] * b[i];
  }
  return sum;
}

class LinearKernel final : public Kernel {
 public:
  LinearKernel(MatrixRef weight, DType bias_dtype, int64_t rows)
      : weight_(std::move(weight)),
        bias_dtype_(bias_dtype),
        rows_(rows),
        inner_(weight_.cols),
        columns_(weight_.rows) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    const float* x = inputs[0].data<float>();
    const void* weight = inputs[1].raw();
    const void* bias = inputs.size() > 2 ? inputs[2].raw() : nullptr;
    float* out = outputs[0].data<float>();
    const int64_t min_chunk = std::max<int64_t>(1, kMinChunkWork / std::max<int64_t>(1, rows_ * inner_));
    context.thread_pool->parallel_for(columns_, min_chunk, [&](int64_t begin, int64_t end) {
      const bool in_place = weight_.dtype == DType::kF32 && !weight_.panels;
      std::vector<float> widened(in_place ? 0 : static_cast<size_t>(inner_));
      for (int64_t n = begin; n < end; ++n) {
        const float* w_row = nullptr;
        if (in_place) {
          w_row = static_cast<const float*>(weight) + n * inner_;
        } else {
          widen_matrix_row(weight, weight_, n, widened.data());
          w_row = widened.data();
        }
        const float b = bias != nullptr ? load_float(bias, bias_dtype_, n) : 0.0f;
        for (int64_t m = 0; m < rows_; ++m) {
          out[m * columns_ + n] = dot(x + m * inner_, w_row, inner_) + b;
        }
      }
    });
    return ok_status();
  }

 private:
  MatrixRef weight_;
  DType bias_dtype_;
  int64_t rows_;     // M: the product of x's leading dimensions
  int64_t inner_;    // K
  int64_t columns_;  // N
};

}  // namespace

KernelResult make_linear_kernel(const KernelSignature& signature) {
  STATICLM_RETURN_IF_ERROR(check_signature(signature, 2, 3));
  const TensorSpec& x = *signature.inputs[0];
  const TensorSpec& weight = *signature.inputs[1];
  const TensorSpec* bias = signature.inputs.size() > 2 ? signature.inputs[2] : nullptr;
  STATICLM_ASSIGN_OR_RETURN(MatrixRef matrix, matrix_input(signature, 0, weight, "weight"));
  if (bias != nullptr) {
    STATICLM_RETURN_IF_ERROR(check_float_weight(signature, *bias, "bias"));
  }
  if (x.dtype != DType::kF32 || x.shape.empty() || matrix.cols != x.shape.back()) {
    return invalid_argument("linear: expected f32 input [..., K] and weight [N, K], found ", dtype_name(x.dtype),
                            shape_string(x.shape), " and [", matrix.rows, ", ", matrix.cols, "]");
  }
  const int64_t rows = num_elements(std::span<const int64_t>(x.shape).first(x.shape.size() - 1));
  return std::make_unique<LinearKernel>(std::move(matrix), bias != nullptr ? bias->dtype : DType::kF32, rows);
}

}  // namespace staticlm::portable
