// SPDX-License-Identifier: Apache-2.0
// multi_linear: each part is the portable linear over the shared x, run one after the other;
// the reference the cpu backend's fused kernel is checked against.
#include "staticlm/backends/portable/multi_linear.h"

#include <string>
#include <variant>
#include <vector>

#include "staticlm/backends/portable/kernel_factories.h"
#include "staticlm/ops/weight_layout.h"

namespace staticlm::portable {

Result<MultiLinearLayout> MultiLinearLayout::of(const KernelSignature& signature) {
  auto split = multi_linear_split(signature.inputs.size(), signature.attributes);
  if (!split.ok()) {
    return split.status().with_context("multi_linear");
  }
  if (static_cast<int64_t>(signature.outputs.size()) != split->parts) {
    return invalid_argument("multi_linear: expected ", split->parts, " outputs, found ", signature.outputs.size());
  }
  for (const TensorSpec* input : signature.inputs) {
    if (input == nullptr) {
      return invalid_argument("multi_linear: every input must be present");
    }
  }
  return MultiLinearLayout(split->parts, split->biased);
}

Attributes MultiLinearLayout::linear_attributes(const Attributes& attrs, int64_t p) {
  Attributes part;
  for (std::string_view name : {kWeightLayoutAttr, kWeightGroupAttr}) {
    if (const AttrValue* value = attrs.find(name)) {
      part.set(std::string(name), *value);
    }
  }
  if (const auto* shapes = std::get_if<std::vector<int64_t>>(attrs.find(kWeightShapesAttr))) {
    if (p >= 0 && static_cast<size_t>(2 * p + 1) < shapes->size()) {
      part.set(std::string(kWeightShapesAttr),
               std::vector<int64_t>{(*shapes)[static_cast<size_t>(2 * p)], (*shapes)[static_cast<size_t>(2 * p + 1)]});
    }
  }
  return part;
}

namespace {

class MultiLinearKernel final : public Kernel {
 public:
  MultiLinearKernel(MultiLinearLayout layout, std::vector<std::unique_ptr<Kernel>> parts)
      : layout_(layout), parts_(std::move(parts)) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    for (int64_t p = 0; p < layout_.parts(); ++p) {
      TensorView part_inputs[3];
      const size_t count = layout_.linear_inputs(inputs, p, part_inputs);
      STATICLM_RETURN_IF_ERROR(parts_[static_cast<size_t>(p)]->execute(
          std::span<const TensorView>(part_inputs, count), outputs.subspan(static_cast<size_t>(p), 1), context));
    }
    return ok_status();
  }

 private:
  MultiLinearLayout layout_;
  std::vector<std::unique_ptr<Kernel>> parts_;
};

}  // namespace

KernelResult make_multi_linear_kernel(const KernelSignature& signature) {
  STATICLM_ASSIGN_OR_RETURN(MultiLinearLayout layout, MultiLinearLayout::of(signature));
  std::vector<std::unique_ptr<Kernel>> parts;
  for (int64_t p = 0; p < layout.parts(); ++p) {
    const TensorSpec* inputs[3];
    const size_t count = layout.linear_inputs(signature.inputs, p, inputs);
    const Attributes attributes = MultiLinearLayout::linear_attributes(signature.attributes, p);
    const KernelSignature part{OpKind::kLinear, InputSpecs(inputs, count),
                               signature.outputs.subspan(static_cast<size_t>(p), 1), attributes};
    auto kernel = make_linear_kernel(part);
    if (!kernel.ok()) {
      return kernel.status().with_context(str_cat("multi_linear part ", p));
    }
    parts.push_back(std::move(*kernel));
  }
  return std::unique_ptr<Kernel>(std::make_unique<MultiLinearKernel>(layout, std::move(parts)));
}

}  // namespace staticlm::portable
