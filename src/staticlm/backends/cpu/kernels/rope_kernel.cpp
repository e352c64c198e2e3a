// SPDX-License-Identifier: Apache-2.0
// The cpu rope: the portable kernel's semantics and angles (cos and sin in double once per row),
// rows split over the pool and each head's rotation vectorized per ISA. Channels past a partial
// rotary_dim (Phi-3's) are copied, as the portable kernel does.
#include <cstring>
#include <utility>
#include <vector>

#include "staticlm/backends/cpu/kernels/cpu_kernel_factories.h"
#include "staticlm/backends/portable/element_access.h"
#include "staticlm/backends/portable/kernel_factories.h"
#include "staticlm/ops/rope.h"

namespace staticlm::cpu {
namespace {

class RopeKernel final : public Kernel {
 public:
  RopeKernel(ElementwiseFns fns, std::vector<double> inv_freq, DType positions_dtype, const Shape& shape)
      : fns_(fns),
        inv_freq_(std::move(inv_freq)),
        positions_dtype_(positions_dtype),
        batch_(shape[0]),
        seq_(shape[1]),
        heads_(shape[2]),
        head_dim_(shape[3]) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    const float* x = inputs[0].data<float>();
    const void* positions = inputs[1].raw();
    float* out = outputs[0].data<float>();
    const auto half = static_cast<int64_t>(inv_freq_.size());
    const int64_t row_elements = heads_ * head_dim_;
    context.thread_pool->parallel_for(seq_, 1, [&](int64_t begin, int64_t end) {
      thread_local std::vector<float> table;
      table.resize(static_cast<size_t>(2 * half));
      float* cos_table = table.data();
      float* sin_table = table.data() + half;
      for (int64_t s = begin; s < end; ++s) {
        const int64_t position = portable::load_index(positions, positions_dtype_, s);
        rope_angles(inv_freq_, position, cos_table, sin_table);
        for (int64_t b = 0; b < batch_; ++b) {
          const int64_t row_offset = (b * seq_ + s) * row_elements;
          if (position < 0) {
            std::memmove(out + row_offset, x + row_offset, static_cast<size_t>(row_elements) * sizeof(float));
            continue;
          }
          for (int64_t h = 0; h < heads_; ++h) {
            const int64_t offset = row_offset + h * head_dim_;
            fns_.rotate_half(x + offset, cos_table, sin_table, out + offset, half);
            if (2 * half < head_dim_ && out != x) {
              std::memcpy(out + offset + 2 * half, x + offset + 2 * half,
                          static_cast<size_t>(head_dim_ - 2 * half) * sizeof(float));
            }
          }
        }
      }
    });
    return ok_status();
  }

 private:
  ElementwiseFns fns_;
  std::vector<double> inv_freq_;
  DType positions_dtype_;
  int64_t batch_;
  int64_t seq_;
  int64_t heads_;
  int64_t head_dim_;
};

}  // namespace

Result<std::unique_ptr<Kernel>> make_rope_kernel(const KernelSignature& signature, ElementwiseFns fns) {
  STATICLM_RETURN_IF_ERROR(portable::make_rope_kernel(signature).status());
  const TensorSpec& x = *signature.inputs[0];
  STATICLM_ASSIGN_OR_RETURN(RopeParams params, RopeParams::from_attributes(signature.attributes, x.shape[3]));
  std::vector<double> inv_freq = params.inverse_frequencies();
  return std::make_unique<RopeKernel>(fns, std::move(inv_freq), signature.inputs[1]->dtype, x.shape);
}

}  // namespace staticlm::cpu
