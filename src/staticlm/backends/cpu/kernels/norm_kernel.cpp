// SPDX-License-Identifier: Apache-2.0
// The cpu rms_norm: the portable kernel's arithmetic with the sum of squares and the scaling
// vectorized per ISA, rows split over the pool (a prefill chunk's 128 rows are worth both
// threads; a decode row runs inline), a left-padded chunk's padding rows skipped. Takes f32
// weights, as the exporter keeps norm weights.
#include <algorithm>

#include "staticlm/backends/cpu/kernels/cpu_kernel_factories.h"
#include "staticlm/backends/portable/kernel_factories.h"

namespace staticlm::cpu {
namespace {

// Values per range before a row range is worth a thread.
constexpr int64_t kMinRangeValues = 1 << 13;

class RmsNormKernel final : public Kernel {
 public:
  RmsNormKernel(ElementwiseFns fns, int64_t rows, int64_t width, float eps)
      : fns_(fns), rows_(rows), width_(width), eps_(eps) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    const float* x = inputs[0].data<float>();
    const float* weight = inputs[1].data<float>();
    float* out = outputs[0].data<float>();
    const int64_t min_rows = std::max<int64_t>(1, kMinRangeValues / std::max<int64_t>(1, width_));
    // Rows that are the chunk's padding are not computed (their outputs are unspecified,
    // docs/ops.md): a short prompt's norm costs its own rows.
    const int64_t first = rows_ == context.chunk_rows ? std::min(context.padding_rows, rows_) : 0;
    context.thread_pool->parallel_for(rows_ - first, min_rows, [&](int64_t begin, int64_t end) {
      for (int64_t r = first + begin; r < first + end; ++r) {
        fns_.rms_norm(x + r * width_, weight, out + r * width_, width_, eps_);
      }
    });
    return ok_status();
  }

 private:
  ElementwiseFns fns_;
  int64_t rows_;
  int64_t width_;
  float eps_;
};

}  // namespace

Result<std::unique_ptr<Kernel>> make_rms_norm_kernel(const KernelSignature& signature, ElementwiseFns fns) {
  // The portable factory checks the signature and eps; this one takes what it takes.
  STATICLM_RETURN_IF_ERROR(portable::make_rms_norm_kernel(signature).status());
  const TensorSpec& x = *signature.inputs[0];
  if (signature.inputs[1]->dtype != DType::kF32) {
    return unimplemented("rms_norm: the cpu kernel takes f32 weights, found ", dtype_name(signature.inputs[1]->dtype));
  }
  STATICLM_ASSIGN_OR_RETURN(double eps, signature.attributes.get_float_or("eps", kRmsNormDefaultEps));
  const int64_t width = x.shape.back();
  return std::make_unique<RmsNormKernel>(fns, num_elements(std::span<const int64_t>(x.shape).first(x.shape.size() - 1)),
                                         width, static_cast<float>(eps));
}

}  // namespace staticlm::cpu
