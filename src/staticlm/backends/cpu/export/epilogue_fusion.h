// SPDX-License-Identifier: Apache-2.0
// Two graph passes that fold what follows a linear into it, so the cpu kernel applies it to each
// range of output columns while they are in cache (docs/ops.md):
//   linear_add_fusion      add(residual, linear(x, w, b)) -> linear_add(x, w, residual, b): the
//                          residual connections after o_proj and down_proj.
//   swiglu_linear_fusion   swiglu(linear(x, w_gate), linear(x, w_up)) -> swiglu_linear(x, w_gate,
//                          w_up) (geglu into geglu_linear alike): the gated MLP's gate and up, whose
//                          outputs are never written.
// A linear is folded only where the op consuming it is its only reader (and it is no graph
// output), has no weight layout yet, and for swiglu_linear has no bias; the fused node takes the
// consumer's place and output, so nothing downstream changes. Run them after swiglu_fusion (which
// makes the swiglu) and before multi_linear_fusion (which would merge gate and up otherwise).
#pragma once

#include "staticlm/graph/pass_manager.h"

namespace staticlm {

class LinearAddFusion final : public GraphPass {
 public:
  std::string_view name() const override { return "linear_add_fusion"; }
  Status run(Graph& graph) override;
};

class SwigluLinearFusion final : public GraphPass {
 public:
  std::string_view name() const override { return "swiglu_linear_fusion"; }
  Status run(Graph& graph) override;
};

}  // namespace staticlm
