// SPDX-License-Identifier: Apache-2.0
#include "staticlm/partition/partition_subgraph.h"

#include <map>
#include <set>

namespace staticlm {

Result<ExtractedPartition> extract_partition(const Graph& graph, std::span<const int32_t> nodes,
                                             std::span<const ValueId> root) {
  const std::set<int32_t> inside(nodes.begin(), nodes.end());
  auto produced_inside = [&](ValueId v) {
    const GraphValue& value = graph.value(v);
    return value.kind == ValueKind::kNodeOutput && inside.count(value.producer) != 0;
  };

  ExtractedPartition out;
  out.graph = std::make_unique<Graph>(graph.constant_table());
  Graph& sub = *out.graph;
  std::map<ValueId, ValueId> mapped;  // method value -> subgraph value
  for (int32_t n : nodes) {
    const GraphNode& node = graph.nodes()[static_cast<size_t>(n)];
    std::vector<ValueId> inputs;
    for (ValueId input : node.inputs) {
      if (input == kNoValue) {
        inputs.push_back(kNoValue);
        continue;
      }
      auto it = mapped.find(input);
      if (it == mapped.end()) {
        const GraphValue& value = graph.value(input);
        ValueId sub_value = kNoValue;
        if (value.kind == ValueKind::kConstant) {
          STATICLM_ASSIGN_OR_RETURN(sub_value, sub.use_constant(value.constant));
        } else {
          STATICLM_ASSIGN_OR_RETURN(sub_value,
                                    sub.add_input(str_cat("input_", out.inputs.size()), value.dtype, value.shape));
          out.inputs.push_back(input);
        }
        it = mapped.emplace(input, sub_value).first;
      }
      inputs.push_back(it->second);
    }
    auto outputs = sub.add_node(node.op, std::move(inputs), node.attributes, node.name);
    if (!outputs.ok()) {
      return outputs.status().with_context(str_cat("partition subgraph, ", describe_node(n, node.op, node.name)));
    }
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      mapped[node.outputs[i]] = (*outputs)[i];
    }
  }

  std::vector<bool> read_outside(graph.num_values(), false);
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    if (inside.count(static_cast<int32_t>(n)) != 0) {
      continue;
    }
    for (ValueId input : graph.nodes()[n].inputs) {
      if (input != kNoValue) {
        read_outside[static_cast<size_t>(input)] = true;
      }
    }
  }
  for (const GraphOutput& output : graph.outputs()) {
    read_outside[static_cast<size_t>(output.value)] = true;
  }
  for (int32_t n : nodes) {
    for (ValueId v : graph.nodes()[static_cast<size_t>(n)].outputs) {
      if (!read_outside[static_cast<size_t>(v)] || !produced_inside(root[static_cast<size_t>(v)])) {
        continue;
      }
      STATICLM_RETURN_IF_ERROR(sub.add_output(str_cat("output_", out.outputs.size()), mapped.at(v)));
      out.outputs.push_back(v);
    }
  }
  return out;
}

}  // namespace staticlm
