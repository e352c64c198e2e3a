// SPDX-License-Identifier: Apache-2.0
// The cpu swiglu (silu(gate) * up with the vector exp, or GeGLU's gelu_tanh(gate) * up), add (the residual
// connections), mul (Granite's multipliers, Gemma's embedding scale, Phi-3's rope attention factor: by a tensor of the
// output's shape, a scalar or a row repeated over the leading axes) and softcap (Gemma 2's final logits). Each is split
// over the pool (a prefill chunk's values are worth both threads; a decode row runs inline).
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

// x times one f32 value read from the other input as the kernel runs (the input is a constant, but the kernel only
// sees it then).
class ScaleKernel final : public Kernel {
 public:
  ScaleKernel(ScaleFn fn, int64_t count, int x_index) : fn_(fn), count_(count), x_index_(x_index) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    const float* x = inputs[static_cast<size_t>(x_index_)].data<float>();
    const float factor = *inputs[static_cast<size_t>(1 - x_index_)].data<float>();
    float* out = outputs[0].data<float>();
    context.thread_pool->parallel_for(
        count_, kMinChunk, [&](int64_t begin, int64_t end) { fn_(x + begin, factor, out + begin, end - begin); });
    return ok_status();
  }

 private:
  ScaleFn fn_;
  int64_t count_;
  int x_index_;
};

// Each row of x times the same row (the other input, broadcast over the leading axes).
class RowMulKernel final : public Kernel {
 public:
  RowMulKernel(PairwiseFn fn, int64_t rows, int64_t width, int x_index)
      : fn_(fn), rows_(rows), width_(width), x_index_(x_index) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    const float* x = inputs[static_cast<size_t>(x_index_)].data<float>();
    const float* row = inputs[static_cast<size_t>(1 - x_index_)].data<float>();
    float* out = outputs[0].data<float>();
    context.thread_pool->parallel_for(rows_, std::max<int64_t>(1, kMinChunk / width_), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        fn_(x + r * width_, row, out + r * width_, width_);
      }
    });
    return ok_status();
  }

 private:
  PairwiseFn fn_;
  int64_t rows_;
  int64_t width_;
  int x_index_;
};

class SoftcapKernel final : public Kernel {
 public:
  SoftcapKernel(ScaleFn fn, float cap, int64_t count) : fn_(fn), cap_(cap), count_(count) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    const float* x = inputs[0].data<float>();
    float* out = outputs[0].data<float>();
    context.thread_pool->parallel_for(
        count_, kMinChunk, [&](int64_t begin, int64_t end) { fn_(x + begin, cap_, out + begin, end - begin); });
    return ok_status();
  }

 private:
  ScaleFn fn_;
  float cap_;
  int64_t count_;
};

// The trailing axes `shape` fills, once leading 1s are dropped: 0 when it is not such a suffix of `out`.
int64_t broadcast_row_width(const Shape& shape, const Shape& out) {
  size_t first = 0;
  while (first < shape.size() && shape[first] == 1) {
    ++first;
  }
  const size_t kept = shape.size() - first;
  if (kept > out.size() || !std::equal(shape.begin() + static_cast<std::ptrdiff_t>(first), shape.end(),
                                       out.end() - static_cast<std::ptrdiff_t>(kept))) {
    return 0;
  }
  return kept == 0 ? 1 : num_elements(shape);
}

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

Result<std::unique_ptr<Kernel>> make_mul_kernel(const KernelSignature& signature, ElementwiseFns fns) {
  STATICLM_RETURN_IF_ERROR(portable::make_mul_kernel(signature).status());
  const TensorSpec& out = signature.outputs[0];
  const int64_t count = num_elements(out.shape);
  for (int x_index : {0, 1}) {
    const TensorSpec& x = *signature.inputs[static_cast<size_t>(x_index)];
    const TensorSpec& other = *signature.inputs[static_cast<size_t>(1 - x_index)];
    if (x.shape != out.shape) {
      continue;
    }
    const int64_t width = broadcast_row_width(other.shape, out.shape);
    if (width == 1) {
      return std::make_unique<ScaleKernel>(fns.scale, count, x_index);
    }
    if (width == count) {
      return std::make_unique<PairwiseKernel>(fns.mul, count);
    }
    if (width > 0) {
      return std::make_unique<RowMulKernel>(fns.mul, count / width, width, x_index);
    }
  }
  return unimplemented(
      "mul: the cpu kernel takes an input of the output's shape times one of the same shape, a "
      "scalar or a trailing row, found ",
      shape_string(signature.inputs[0]->shape), " and ", shape_string(signature.inputs[1]->shape), " for ",
      shape_string(out.shape));
}

Result<std::unique_ptr<Kernel>> make_softcap_kernel(const KernelSignature& signature, ElementwiseFns fns) {
  STATICLM_RETURN_IF_ERROR(portable::make_softcap_kernel(signature).status());
  STATICLM_ASSIGN_OR_RETURN(double cap, signature.attributes.get_float("cap"));
  return std::make_unique<SoftcapKernel>(fns.softcap, static_cast<float>(cap),
                                         num_elements(signature.outputs[0].shape));
}

}  // namespace staticlm::cpu
