// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/cpu/export/swiglu_fusion.h"

#include <vector>

namespace staticlm {

Status SwigluFusion::run(Graph& graph) {
  const std::span<const GraphNode> nodes = graph.nodes();
  const std::vector<int> readers = graph.count_readers();
  // The silu feeding a mul as its only reader.
  auto fusable_silu = [&](ValueId value) -> int32_t {
    const GraphValue& v = graph.value(value);
    if (v.kind != ValueKind::kNodeOutput || v.producer < 0 || readers[static_cast<size_t>(value)] != 1) {
      return -1;
    }
    return nodes[static_cast<size_t>(v.producer)].op == OpKind::kSilu ? v.producer : -1;
  };
  std::vector<bool> removed(nodes.size(), false);
  std::vector<GraphNode> rewritten(nodes.begin(), nodes.end());
  bool changed = false;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const GraphNode& node = nodes[n];
    if (node.op != OpKind::kMul || node.inputs.size() != 2) {
      continue;
    }
    for (int side = 0; side < 2; ++side) {
      const ValueId gated = node.inputs[static_cast<size_t>(side)];
      const ValueId up = node.inputs[static_cast<size_t>(1 - side)];
      const int32_t silu = fusable_silu(gated);
      // swiglu takes gate and up of one shape (mul would broadcast).
      if (silu < 0 || graph.value(gated).shape != graph.value(up).shape || gated == up) {
        continue;
      }
      GraphNode& fused = rewritten[n];
      fused.op = OpKind::kSwiglu;
      fused.inputs = {nodes[static_cast<size_t>(silu)].inputs[0], up};
      fused.attributes = {};
      removed[static_cast<size_t>(silu)] = true;
      changed = true;
      break;
    }
  }
  if (!changed) {
    return ok_status();
  }
  graph.replace_nodes(std::move(rewritten), removed);
  return ok_status();
}

}  // namespace staticlm
