// The cpu swiglu: silu(gate) * up with the vector exp, split over the pool (a prefill chunk's
// 128 x 1536 values are worth both threads; a decode row runs inline).
#include <algorithm>

#include "staticlm/backends/cpu/kernels/cpu_kernel_factories.h"
#include "staticlm/backends/portable/kernel_factories.h"

namespace staticlm::cpu {
namespace {

constexpr int64_t kMinChunk = 1 << 13;

class SwigluKernel final : public Kernel {
 public:
  SwigluKernel(ElementwiseFns fns, int64_t count) : fns_(fns), count_(count) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    const float* gate = inputs[0].data<float>();
    const float* up = inputs[1].data<float>();
    float* out = outputs[0].data<float>();
    context.thread_pool->parallel_for(count_, kMinChunk, [&](int64_t begin, int64_t end) {
      fns_.swiglu(gate + begin, up + begin, out + begin, end - begin);
    });
    return ok_status();
  }

 private:
  ElementwiseFns fns_;
  int64_t count_;
};

}  // namespace

Result<std::unique_ptr<Kernel>> make_swiglu_kernel(const KernelSignature& signature, ElementwiseFns fns) {
  STATICLM_RETURN_IF_ERROR(portable::make_swiglu_kernel(signature).status());
  return std::make_unique<SwigluKernel>(fns, num_elements(signature.inputs[0]->shape));
}

}  // namespace staticlm::cpu
