// SPDX-License-Identifier: Apache-2.0
// linear_add and swiglu_linear: the portable kernels of the ops they replace, run one after the
// other (docs/ops.md), so a fused program computes what the unfused one did, bit for bit. The
// reference the cpu backend's fused kernels are checked against.
#include <memory>
#include <vector>

#include "staticlm/backends/portable/kernel_factories.h"
#include "staticlm/backends/portable/multi_linear.h"

namespace staticlm::portable {
namespace {

// residual + linear(x, w, b): the linear writes the output, then the add kernel (elementwise at
// equal shapes, so its output may be one of its inputs) adds the residual in place.
class LinearAddKernel final : public Kernel {
 public:
  LinearAddKernel(std::unique_ptr<Kernel> linear, std::unique_ptr<Kernel> add)
      : linear_(std::move(linear)), add_(std::move(add)) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    const TensorView linear_inputs[3] = {inputs[0], inputs[1], inputs.size() > 3 ? inputs[3] : TensorView()};
    STATICLM_RETURN_IF_ERROR(
        linear_->execute(std::span<const TensorView>(linear_inputs, inputs.size() > 3 ? 3 : 2), outputs, context));
    const TensorView add_inputs[2] = {inputs[2], outputs[0]};
    return add_->execute(add_inputs, outputs, context);
  }

 private:
  std::unique_ptr<Kernel> linear_;
  std::unique_ptr<Kernel> add_;
};

// swiglu(linear(x, w_gate), linear(x, w_up)): the gate's linear writes the output, the up's a
// buffer of the call, and the swiglu kernel (elementwise) combines them into the output.
class SwigluLinearKernel final : public Kernel {
 public:
  SwigluLinearKernel(std::unique_ptr<Kernel> gate, std::unique_ptr<Kernel> up, std::unique_ptr<Kernel> swiglu)
      : gate_(std::move(gate)), up_(std::move(up)), swiglu_(std::move(swiglu)) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    const TensorView gate_inputs[2] = {inputs[0], inputs[1]};
    STATICLM_RETURN_IF_ERROR(gate_->execute(gate_inputs, outputs, context));
    std::vector<float> up(static_cast<size_t>(outputs[0].numel()));
    const TensorView up_view(up.data(), DType::kF32, outputs[0].shape());
    const TensorView up_inputs[2] = {inputs[0], inputs[2]};
    STATICLM_RETURN_IF_ERROR(up_->execute(up_inputs, std::span<const TensorView>(&up_view, 1), context));
    const TensorView swiglu_inputs[2] = {outputs[0], up_view};
    return swiglu_->execute(swiglu_inputs, outputs, context);
  }

 private:
  std::unique_ptr<Kernel> gate_;
  std::unique_ptr<Kernel> up_;
  std::unique_ptr<Kernel> swiglu_;
};

// The linear of matrix `matrix` of `signature` over (x, weight[, bias]).
KernelResult part_kernel(const KernelSignature& signature, int64_t matrix, std::span<const TensorSpec* const> inputs,
                         std::string_view role) {
  const Attributes attributes = MultiLinearLayout::linear_attributes(signature.attributes, matrix);
  const KernelSignature part{OpKind::kLinear, inputs, signature.outputs, attributes};
  auto kernel = make_linear_kernel(part);
  if (!kernel.ok()) {
    return kernel.status().with_context(str_cat(op_name(signature.op), " ", role));
  }
  return kernel;
}

}  // namespace

KernelResult make_linear_add_kernel(const KernelSignature& signature) {
  STATICLM_RETURN_IF_ERROR(check_signature(signature, 3, 4));
  const bool biased = signature.inputs.size() > 3 && signature.inputs[3] != nullptr;
  const TensorSpec* linear_inputs[3] = {signature.inputs[0], signature.inputs[1],
                                        biased ? signature.inputs[3] : nullptr};
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> linear,
                            part_kernel(signature, 0, std::span(linear_inputs, biased ? 3 : 2), "linear"));
  const TensorSpec out = signature.outputs[0];
  const TensorSpec* add_inputs[2] = {signature.inputs[2], &out};
  const Attributes none;
  const KernelSignature add{OpKind::kAdd, add_inputs, signature.outputs, none};
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> add_kernel, make_add_kernel(add));
  return std::unique_ptr<Kernel>(std::make_unique<LinearAddKernel>(std::move(linear), std::move(add_kernel)));
}

KernelResult make_swiglu_linear_kernel(const KernelSignature& signature) {
  STATICLM_RETURN_IF_ERROR(check_signature(signature, 3, 3));
  const TensorSpec* gate_inputs[2] = {signature.inputs[0], signature.inputs[1]};
  const TensorSpec* up_inputs[2] = {signature.inputs[0], signature.inputs[2]};
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> gate, part_kernel(signature, 0, gate_inputs, "gate"));
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> up, part_kernel(signature, 1, up_inputs, "up"));
  const TensorSpec out = signature.outputs[0];
  const TensorSpec* swiglu_inputs[2] = {&out, &out};
  const Attributes none;
  const OpKind gate_op = gate_activation(signature.op) == GateActivation::kGeluTanh ? OpKind::kGeglu : OpKind::kSwiglu;
  const KernelSignature swiglu{gate_op, swiglu_inputs, signature.outputs, none};
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> swiglu_kernel, make_swiglu_kernel(swiglu));
  return std::unique_ptr<Kernel>(
      std::make_unique<SwigluLinearKernel>(std::move(gate), std::move(up), std::move(swiglu_kernel)));
}

}  // namespace staticlm::portable
