#include "staticlm/backends/cpu/export/weight_dtype_pass.h"

#include <map>
#include <string>

#include "staticlm/core/float_convert.h"

namespace staticlm {

Status WeightDtypePass::run(Graph& graph) {
  const Result<DType> parsed = parse_dtype(dtype_);
  if (!parsed.ok() || !is_plain_float(*parsed)) {
    return invalid_argument("option 'weight_dtype': expected f32, f16 or bf16, found '", dtype_, "'");
  }
  const DType target = *parsed;
  std::map<ValueId, ValueId> converted;  // original constant value -> converted one
  std::vector<GraphNode>& nodes = graph.mutable_nodes();
  for (GraphNode& node : nodes) {
    for (size_t input : matrix_inputs(node.op, node.inputs.size(), node.attributes)) {
      const ValueId original = node.inputs[input];
      if (original == kNoValue || graph.value(original).kind != ValueKind::kConstant) {
        continue;
      }
      auto it = converted.find(original);
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
        } else if (graph.constants().at(id).dtype != target || graph.constants().at(id).shape != entry.shape) {
          return invalid_argument("weight_dtype: the converted weight's name '", name,
                                  "' is taken by a constant of another dtype or shape than ", dtype_name(target),
                                  shape_string(entry.shape));
        }
        STATICLM_ASSIGN_OR_RETURN(const ValueId value, graph.use_constant(id));
        it = converted.emplace(original, value).first;
      }
      node.inputs[input] = it->second;
    }
  }
  return ok_status();
}

}  // namespace staticlm
