// SPDX-License-Identifier: Apache-2.0
// rms_norm and layer_norm over the last axis. Weights (and the layer_norm bias) are widened to
// f32 once per call; statistics are computed per row in f32.
#include <cmath>
#include <vector>

#include "staticlm/backends/portable/element_access.h"
#include "staticlm/backends/portable/kernel_factories.h"

namespace staticlm::portable {
namespace {

enum class NormKind { kRms, kLayer };

class NormKernel final : public Kernel {
 public:
  NormKernel(NormKind kind, float eps, DType weight_dtype, DType bias_dtype, int64_t rows, int64_t width)
      : kind_(kind), eps_(eps), weight_dtype_(weight_dtype), bias_dtype_(bias_dtype), rows_(rows), width_(width) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext&) const override {
    const size_t width = static_cast<size_t>(width_);
    std::vector<float> weight(width);
    widen_to_f32(inputs[1].raw(), weight_dtype_, 0, width_, weight.data());
    std::vector<float> bias(width, 0.0f);
    if (inputs.size() > 2 && inputs[2].raw() != nullptr) {
      widen_to_f32(inputs[2].raw(), bias_dtype_, 0, width_, bias.data());
    }
    const float* x = inputs[0].data<float>();
    float* out = outputs[0].data<float>();
    const auto count = static_cast<float>(width_);
    for (int64_t r = 0; r < rows_; ++r) {
      const float* row = x + r * width_;
      float* out_row = out + r * width_;
      if (kind_ == NormKind::kRms) {
        float sum_squares = 0.0f;
        for (size_t i = 0; i < width; ++i) {
          sum_squares += row[i] * row[i];
        }
        const float inv_rms = 1.0f / std::sqrt(sum_squares / count + eps_);
        for (size_t i = 0; i < width; ++i) {
          out_row[i] = row[i] * inv_rms * weight[i];
        }
      } else {
        float sum = 0.0f;
        for (size_t i = 0; i < width; ++i) {
          sum += row[i];
        }
        const float mean = sum / count;
        float sum_squares = 0.0f;
        for (size_t i = 0; i < width; ++i) {
          sum_squares += (row[i] - mean) * (row[i] - mean);
        }
        const float inv_std = 1.0f / std::sqrt(sum_squares / count + eps_);
        for (size_t i = 0; i < width; ++i) {
          out_row[i] = (row[i] - mean) * inv_std * weight[i] + bias[i];
        }
      }
    }
    return ok_status();
  }

 private:
  NormKind kind_;
  float eps_;
  DType weight_dtype_;
  DType bias_dtype_;
  int64_t rows_;
  int64_t width_;
};

KernelResult make_norm_kernel(const KernelSignature& signature, NormKind kind, double default_eps) {
  STATICLM_RETURN_IF_ERROR(check_signature(signature, 2, kind == NormKind::kRms ? 2 : 3));
  const TensorSpec& x = *signature.inputs[0];
  const TensorSpec& weight = *signature.inputs[1];
  const TensorSpec* bias = signature.inputs.size() > 2 ? signature.inputs[2] : nullptr;
  STATICLM_RETURN_IF_ERROR(check_float_weight(signature, weight, "weight"));
  if (bias != nullptr) {
    STATICLM_RETURN_IF_ERROR(check_float_weight(signature, *bias, "bias"));
  }
  if (x.dtype != DType::kF32 || x.shape.empty() || weight.shape != Shape{x.shape.back()}) {
    return invalid_argument(op_name(signature.op), ": expected f32 input [..., D] and weight [D], found ",
                            dtype_name(x.dtype), shape_string(x.shape), " and ", shape_string(weight.shape));
  }
  auto eps = signature.attributes.get_float_or("eps", default_eps);
  if (!eps.ok()) {
    return eps.status().with_context(op_name(signature.op));
  }
  if (!(*eps >= 0.0)) {
    return invalid_argument(op_name(signature.op), ": attribute 'eps': expected a value >= 0, found ", *eps);
  }
  const int64_t width = x.shape.back();
  const int64_t rows = num_elements(std::span<const int64_t>(x.shape).first(x.shape.size() - 1));
  return std::make_unique<NormKernel>(kind, static_cast<float>(*eps), weight.dtype,
                                      bias != nullptr ? bias->dtype : DType::kF32, rows, width);
}

}  // namespace

KernelResult make_rms_norm_kernel(const KernelSignature& signature) {
  return make_norm_kernel(signature, NormKind::kRms, kRmsNormDefaultEps);
}

KernelResult make_layer_norm_kernel(const KernelSignature& signature) {
  return make_norm_kernel(signature, NormKind::kLayer, kLayerNormDefaultEps);
}

}  // namespace staticlm::portable
