#include "staticlm/graph/alias_roots.h"

namespace staticlm {

std::vector<ValueId> alias_roots(const Graph& graph) {
  std::vector<ValueId> root(graph.num_values());
  for (size_t v = 0; v < root.size(); ++v) {
    root[v] = static_cast<ValueId>(v);
  }
  for (const GraphNode& node : graph.nodes()) {
    const int aliased = in_place_input(node.op, node.attributes);
    if (aliased >= 0) {
      root[static_cast<size_t>(node.outputs[0])] = root[static_cast<size_t>(node.inputs[static_cast<size_t>(aliased)])];
    }
  }
  return root;
}

}  // namespace staticlm
