// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/cpu/export/weight_dtype_pass.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "staticlm/core/float_convert.h"

namespace staticlm {

Status WeightDtypePass::run(Graph& graph) {
  // Every node's format first: the head's is found by its weight value, which this rewrites.
  std::vector<MatrixFormat> formats;
  for (const GraphNode& node : graph.nodes()) {
    STATICLM_ASSIGN_OR_RETURN(MatrixFormat format, formats_.for_node(graph, node));
    formats.push_back(format);
  }
  // (original constant value, target dtype) -> converted value
  std::map<std::pair<ValueId, DType>, ValueId> converted;
  std::vector<GraphNode>& nodes = graph.mutable_nodes();
  for (size_t n = 0; n < nodes.size(); ++n) {
    GraphNode& node = nodes[n];
    if (!formats[n].dtype) {
      continue;  // as exported, or quantized by pack_weights from whatever dtype it has
    }
    const DType target = *formats[n].dtype;
    for (size_t input : matrix_inputs(node.op, node.inputs.size(), node.attributes)) {
      const ValueId original = node.inputs[input];
      if (original == kNoValue || graph.value(original).kind != ValueKind::kConstant) {
        continue;
      }
      auto it = converted.find({original, target});
      if (it == converted.end()) {
        // Copies: adding to the table may move its entries.
        const ConstantEntry entry = graph.constants().at(graph.value(original).constant);
        if (entry.dtype == target || !is_plain_float(entry.dtype) || entry.shape.size() != 2) {
          continue;
        }
        const std::string name = str_cat(entry.name, ".", dtype_name(target));
        ConstantId id = graph.constants().find(name);
        if (id < 0) {
          STATICLM_ASSIGN_OR_RETURN(std::shared_ptr<ByteSource> source,
                                    converted_float_source(entry.source, entry.dtype, target, entry.name));
          STATICLM_ASSIGN_OR_RETURN(id, graph.mutable_constants().add(name, target, entry.shape, std::move(source)));
          if (entry.tied_head) {  // the converted table is the head's as the original was
            graph.mutable_constants().mark_tied_head(id);
          }
        } else if (graph.constants().at(id).dtype != target || graph.constants().at(id).shape != entry.shape) {
          return invalid_argument("weight_dtype: the converted weight's name '", name,
                                  "' is taken by a constant of another dtype or shape than ", dtype_name(target),
                                  shape_string(entry.shape));
        }
        STATICLM_ASSIGN_OR_RETURN(const ValueId value, graph.use_constant(id));
        it = converted.emplace(std::pair{original, target}, value).first;
      }
      node.inputs[input] = it->second;
    }
  }
  return ok_status();
}

}  // namespace staticlm
