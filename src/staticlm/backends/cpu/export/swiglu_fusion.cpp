// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/cpu/export/swiglu_fusion.h"

#include <vector>

namespace staticlm {

Status SwigluFusion::run(Graph& graph) {
  const std::span<const GraphNode> nodes = graph.nodes();
  const std::vector<int> readers = graph.count_readers();
  // The silu, or tanh-approximated gelu, feeding a mul as its only reader.
  auto fusable_activation = [&](ValueId value) -> int32_t {
    const GraphValue& v = graph.value(value);
    if (v.kind != ValueKind::kNodeOutput || v.producer < 0 || readers[static_cast<size_t>(value)] != 1) {
      return -1;
    }
    const GraphNode& producer = nodes[static_cast<size_t>(v.producer)];
    const Result<std::string> approximate = producer.attributes.get_string_or("approximate", "none");
    const bool gelu_tanh = producer.op == OpKind::kGelu && approximate.ok() && *approximate == "tanh";
    return producer.op == OpKind::kSilu || gelu_tanh ? v.producer : -1;
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
      const int32_t activation = fusable_activation(gated);
      // swiglu takes gate and up of one shape (mul would broadcast).
      if (activation < 0 || graph.value(gated).shape != graph.value(up).shape || gated == up) {
        continue;
      }
      const GraphNode& producer = nodes[static_cast<size_t>(activation)];
      GraphNode& fused = rewritten[n];
      fused.op = producer.op == OpKind::kGelu ? OpKind::kGeglu : OpKind::kSwiglu;
      fused.inputs = {producer.inputs[0], up};
      fused.attributes = {};
      removed[static_cast<size_t>(activation)] = true;
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
