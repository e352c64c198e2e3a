// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/cpu/export/epilogue_fusion.h"

#include <optional>
#include <utility>
#include <vector>

#include "staticlm/ops/weight_layout.h"

namespace staticlm {
namespace {

bool has_bias(const GraphNode& node) {
  return node.inputs.size() > 2 && node.inputs[2] != kNoValue;
}

// The linear producing `value` when the pass may fold it into its one reader: a plain linear
// (no weight layout chosen yet) whose output nothing else reads. Its node index, or nullopt.
std::optional<size_t> foldable_linear(const Graph& graph, const std::vector<int>& readers, ValueId value) {
  const int32_t producer = graph.producer_of(value);
  if (producer < 0 || readers[static_cast<size_t>(value)] != 1) {
    return std::nullopt;
  }
  const GraphNode& node = graph.nodes()[static_cast<size_t>(producer)];
  if (node.op != OpKind::kLinear || node.inputs.size() < 2 || node.attributes.has(kWeightLayoutAttr)) {
    return std::nullopt;
  }
  return static_cast<size_t>(producer);
}

// Rewrites the graph with each (consumer, fused node) replacing the consumer in place and the
// folded linears dropped.
void install(Graph& graph, std::vector<std::pair<size_t, GraphNode>> fused, const std::vector<bool>& folded) {
  std::vector<GraphNode> nodes(graph.nodes().begin(), graph.nodes().end());
  for (auto& [consumer, node] : fused) {
    nodes[consumer] = std::move(node);
  }
  graph.replace_nodes(std::move(nodes), folded);
}

}  // namespace

Status LinearAddFusion::run(Graph& graph) {
  const std::vector<int> readers = graph.count_readers();
  const std::span<const GraphNode> nodes = graph.nodes();
  std::vector<bool> folded(nodes.size(), false);
  std::vector<std::pair<size_t, GraphNode>> fused;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const GraphNode& add = nodes[n];
    if (add.op != OpKind::kAdd || add.inputs.size() != 2) {
      continue;
    }
    // add(residual, projected) as the decoder builds it; the other order too.
    for (size_t side : {size_t{1}, size_t{0}}) {
      const ValueId projected = add.inputs[side];
      const ValueId residual = add.inputs[1 - side];
      const std::optional<size_t> linear = foldable_linear(graph, readers, projected);
      // linear_add adds no broadcast: the residual has the linear's output spec.
      if (!linear || folded[*linear] || residual == projected || graph.spec(residual) != graph.spec(projected)) {
        continue;
      }
      const GraphNode& node = nodes[*linear];
      GraphNode fused_node;
      fused_node.op = OpKind::kLinearAdd;
      fused_node.inputs = {node.inputs[0], node.inputs[1], residual};
      if (has_bias(node)) {
        fused_node.inputs.push_back(node.inputs[2]);
      }
      fused_node.outputs = add.outputs;
      fused_node.name = node.name.empty() ? add.name : node.name;
      folded[*linear] = true;
      fused.emplace_back(n, std::move(fused_node));
      break;
    }
  }
  if (!fused.empty()) {
    install(graph, std::move(fused), folded);
  }
  return ok_status();
}

Status SwigluLinearFusion::run(Graph& graph) {
  const std::vector<int> readers = graph.count_readers();
  const std::span<const GraphNode> nodes = graph.nodes();
  std::vector<bool> folded(nodes.size(), false);
  std::vector<std::pair<size_t, GraphNode>> fused;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const GraphNode& swiglu = nodes[n];
    if ((swiglu.op != OpKind::kSwiglu && swiglu.op != OpKind::kGeglu) || swiglu.inputs.size() != 2 ||
        swiglu.inputs[0] == swiglu.inputs[1]) {
      continue;
    }
    const std::optional<size_t> gate = foldable_linear(graph, readers, swiglu.inputs[0]);
    const std::optional<size_t> up = foldable_linear(graph, readers, swiglu.inputs[1]);
    if (!gate || !up || has_bias(nodes[*gate]) || has_bias(nodes[*up]) ||
        nodes[*gate].inputs[0] != nodes[*up].inputs[0]) {
      continue;
    }
    GraphNode fused_node;
    fused_node.op = swiglu.op == OpKind::kGeglu ? OpKind::kGegluLinear : OpKind::kSwigluLinear;
    fused_node.inputs = {nodes[*gate].inputs[0], nodes[*gate].inputs[1], nodes[*up].inputs[1]};
    fused_node.outputs = swiglu.outputs;
    fused_node.name = swiglu.name;
    folded[*gate] = true;
    folded[*up] = true;
    fused.emplace_back(n, std::move(fused_node));
  }
  if (!fused.empty()) {
    install(graph, std::move(fused), folded);
  }
  return ok_status();
}

}  // namespace staticlm
