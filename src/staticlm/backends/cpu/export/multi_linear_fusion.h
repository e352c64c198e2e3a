// SPDX-License-Identifier: Apache-2.0
// MultiLinearFusion: a graph pass that merges the linears reading one input (the q / k / v
// projections of a layer, its MLP's gate and up) into one multi_linear node (docs/ops.md), so
// the cpu kernel splits all their output columns over the threads at once: one barrier instead
// of one per projection, and each thread's weight stream runs on from one matrix into the next.
//
// Linears are merged when they share x, either all have a bias or none has, and every weight and
// bias is available where the first of them runs. The fused node takes the first one's place and
// keeps their output values, so nothing downstream changes.
#pragma once

#include "staticlm/graph/pass_manager.h"

namespace staticlm {

class MultiLinearFusion final : public GraphPass {
 public:
  // The cpu kernel binds at most this many parts (backends/cpu/kernels/linear_kernel.cpp).
  static constexpr size_t kMaxParts = 8;

  std::string_view name() const override { return "multi_linear_fusion"; }
  Status run(Graph& graph) override;
};

}  // namespace staticlm
