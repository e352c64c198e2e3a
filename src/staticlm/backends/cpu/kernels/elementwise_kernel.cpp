// SPDX-License-Identifier: Apache-2.0
// The cpu swiglu (silu(gate) * up with the vector exp, or GeGLU's gelu_tanh(gate) * up) and add (the residual
// connections): one kernel over two f32 inputs of the output's shape, split over the pool (a prefill chunk's values are
// worth both threads; a decode row runs inline).
#include <algorithm>

#include "staticlm/backends/cpu/kernels/cpu_kernel_factories.h"
#include "staticlm/backends/portable/kernel_factories.h"

namespace staticlm::cpu {
namespace {

constexpr int64_t kMinChunk = 1 << 13;

class PairwiseKernel final : public Kernel {
 public:
  PairwiseKernel(PairwiseFn fn, int64_t count) : fn_(fn), count_(count) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    const float* a = inputs[0].data<float>();
    const float* b = inputs[1].data<float>();
    float* out = outputs[0].data<float>();
    context.thread_pool->parallel_for(
        count_, kMinChunk, [&](int64_t begin, int64_t end) { fn_(a + begin, b + begin, out + begin, end - begin); });
    return ok_status();
  }

 private:
  PairwiseFn fn_;
  int64_t count_;
};

}  // namespace

Result<std::unique_ptr<Kernel>> make_swiglu_kernel(const KernelSignature& signature, ElementwiseFns fns) {
  STATICLM_RETURN_IF_ERROR(portable::make_swiglu_kernel(signature).status());
  const PairwiseFn fn =
      portable::gate_activation(signature.op) == portable::GateActivation::kSilu ? fns.swiglu : fns.geglu;
  if (fn == nullptr) {
    return unimplemented(op_name(signature.op), ": this entry has no loop for it");
  }
  return std::make_unique<PairwiseKernel>(fn, num_elements(signature.inputs[0]->shape));
}

Result<std::unique_ptr<Kernel>> make_add_kernel(const KernelSignature& signature, ElementwiseFns fns) {
  STATICLM_RETURN_IF_ERROR(portable::make_add_kernel(signature).status());
  const TensorSpec& a = *signature.inputs[0];
  const TensorSpec& b = *signature.inputs[1];
  const TensorSpec& out = signature.outputs[0];
  if (a.shape != out.shape || b.shape != out.shape) {
    // Broadcasts stay with the portable kernel.
    return unimplemented("add: the cpu kernel takes inputs of the output's shape, found ", shape_string(a.shape),
                         " and ", shape_string(b.shape), " for ", shape_string(out.shape));
  }
  return std::make_unique<PairwiseKernel>(fns.add, num_elements(out.shape));
}

}  // namespace staticlm::cpu
