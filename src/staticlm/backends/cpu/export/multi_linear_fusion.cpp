// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/cpu/export/multi_linear_fusion.h"

#include <vector>

namespace staticlm {
namespace {

bool has_bias(const GraphNode& node) {
  return node.inputs.size() > 2 && node.inputs[2] != kNoValue;
}

}  // namespace

Status MultiLinearFusion::run(Graph& graph) {
  const std::span<const GraphNode> nodes = graph.nodes();
  std::vector<bool> merged(nodes.size(), false);
  std::vector<GraphNode> kept;
  bool changed = false;
  for (size_t first = 0; first < nodes.size(); ++first) {
    if (merged[first]) {
      continue;
    }
    const GraphNode& head = nodes[first];
    if (head.op != OpKind::kLinear || head.inputs.size() < 2) {
      kept.push_back(head);
      continue;
    }
    std::vector<size_t> group{first};
    for (size_t n = first + 1; n < nodes.size() && group.size() < kMaxParts; ++n) {
      const GraphNode& node = nodes[n];
      if (merged[n] || node.op != OpKind::kLinear || node.inputs.size() < 2 || node.inputs[0] != head.inputs[0] ||
          has_bias(node) != has_bias(head) || !graph.defined_before(node.inputs[1], first) ||
          (has_bias(node) && !graph.defined_before(node.inputs[2], first))) {
        continue;
      }
      group.push_back(n);
    }
    if (group.size() < 2) {
      kept.push_back(head);
      continue;
    }
    GraphNode fused;
    fused.op = OpKind::kMultiLinear;
    fused.inputs.push_back(head.inputs[0]);
    for (size_t n : group) {
      fused.inputs.push_back(nodes[n].inputs[1]);
    }
    for (size_t n : group) {
      if (has_bias(head)) {
        fused.inputs.push_back(nodes[n].inputs[2]);
      }
      fused.outputs.push_back(nodes[n].outputs.at(0));
      if (!nodes[n].name.empty()) {
        fused.name += str_cat(fused.name.empty() ? "" : "+", nodes[n].name);
      }
      merged[n] = true;
    }
    fused.attributes = Attributes{{"parts", static_cast<int64_t>(group.size())}};
    kept.push_back(std::move(fused));
    changed = true;
  }
  if (changed) {
    graph.replace_nodes(std::move(kept));
  }
  return ok_status();
}

}  // namespace staticlm
