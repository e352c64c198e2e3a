// SPDX-License-Identifier: Apache-2.0
#include "staticlm/graph/alias_roots.h"

namespace staticlm {

std::vector<ValueId> alias_roots(const Graph& graph) {
  std::vector<ValueId> root(graph.num_values());
  for (size_t v = 0; v < root.size(); ++v) {
    root[v] = static_cast<ValueId>(v);
  }
  for (const GraphNode& node : graph.nodes()) {
    for (const InPlaceUpdate& update : in_place_updates(node.op, node.attributes)) {
      root[static_cast<size_t>(node.outputs[update.output])] = root[static_cast<size_t>(node.inputs[update.input])];
    }
  }
  return root;
}

}  // namespace staticlm
