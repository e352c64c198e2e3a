// SPDX-License-Identifier: Apache-2.0
// rope: rotates channel pairs (i, i + rotary_dim / 2) of every head by position * inv_freq[i]
// ("rotate half"). Inverse frequencies come from RopeParams at creation; the angles' cos and
// sin are computed in double once per row per call. Padding rows (negative positions) and the
// channels at or beyond rotary_dim are copied unchanged.
#include "staticlm/ops/rope.h"

#include <cstring>
#include <utility>
#include <vector>

#include "staticlm/backends/portable/element_access.h"
#include "staticlm/backends/portable/kernel_factories.h"

namespace staticlm::portable {
namespace {

class RopeKernel final : public Kernel {
 public:
  RopeKernel(std::vector<double> inv_freq, DType positions_dtype, const Shape& shape)
      : inv_freq_(std::move(inv_freq)),
        positions_dtype_(positions_dtype),
        batch_(shape[0]),
        seq_(shape[1]),
        heads_(shape[2]),
        head_dim_(shape[3]) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext&) const override {
    const float* x = inputs[0].data<float>();
    const void* positions = inputs[1].raw();
    float* out = outputs[0].data<float>();
    const auto half = static_cast<int64_t>(inv_freq_.size());
    std::vector<float> cos_table(inv_freq_.size());
    std::vector<float> sin_table(inv_freq_.size());
    const int64_t row_elements = heads_ * head_dim_;
    for (int64_t s = 0; s < seq_; ++s) {
      const int64_t position = load_index(positions, positions_dtype_, s);
      rope_angles(inv_freq_, position, cos_table.data(), sin_table.data());
      for (int64_t b = 0; b < batch_; ++b) {
        const int64_t row_offset = (b * seq_ + s) * row_elements;
        if (position < 0) {
          std::memmove(out + row_offset, x + row_offset, static_cast<size_t>(row_elements) * sizeof(float));
          continue;
        }
        for (int64_t h = 0; h < heads_; ++h) {
          const float* in_head = x + row_offset + h * head_dim_;
          float* out_head = out + row_offset + h * head_dim_;
          for (int64_t i = 0; i < half; ++i) {
            const float first = in_head[i];
            const float second = in_head[i + half];
            const float c = cos_table[static_cast<size_t>(i)];
            const float sn = sin_table[static_cast<size_t>(i)];
            out_head[i] = first * c - second * sn;
            out_head[i + half] = second * c + first * sn;
          }
          for (int64_t i = 2 * half; i < head_dim_; ++i) {
            out_head[i] = in_head[i];
          }
        }
      }
    }
    return ok_status();
  }

 private:
  std::vector<double> inv_freq_;
  DType positions_dtype_;
  int64_t batch_;
  int64_t seq_;
  int64_t heads_;
  int64_t head_dim_;
};

}  // namespace

KernelResult make_rope_kernel(const KernelSignature& signature) {
  STATICLM_RETURN_IF_ERROR(check_signature(signature, 2, 2));
  const TensorSpec& x = *signature.inputs[0];
  const TensorSpec& positions = *signature.inputs[1];
  if (x.dtype != DType::kF32 || x.shape.size() != 4 || !is_index_dtype(positions.dtype) ||
      positions.shape != Shape{x.shape[1]}) {
    return invalid_argument("rope: expected f32 input [batch, seq, heads, head_dim] and index positions [seq], found ",
                            dtype_name(x.dtype), shape_string(x.shape), " and ", dtype_name(positions.dtype),
                            shape_string(positions.shape));
  }
  auto params = RopeParams::from_attributes(signature.attributes, x.shape[3]);
  if (!params.ok()) {
    return params.status().with_context("rope");
  }
  return std::make_unique<RopeKernel>(params->inverse_frequencies(), positions.dtype, x.shape);
}

}  // namespace staticlm::portable
