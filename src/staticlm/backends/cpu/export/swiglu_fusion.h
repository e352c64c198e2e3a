// SPDX-License-Identifier: Apache-2.0
// SwigluFusion: a graph pass that rewrites mul(silu(gate), up) into the fused op swiglu(gate, up),
// and mul(gelu(gate, approximate=tanh), up) into geglu(gate, up) (Gemma's; docs/ops.md), wherever the activation's
// output has no other reader and is not a graph output, so a gated MLP's activation is one kernel call instead of two
// and one buffer fewer.
#pragma once

#include "staticlm/graph/pass_manager.h"

namespace staticlm {

class SwigluFusion final : public GraphPass {
 public:
  std::string_view name() const override { return "swiglu_fusion"; }
  Status run(Graph& graph) override;
};

}  // namespace staticlm
