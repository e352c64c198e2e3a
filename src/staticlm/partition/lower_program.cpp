#include "staticlm/partition/lower_program.h"

#include <map>
#include <set>

#include "staticlm/graph/memory_planner.h"
#include "staticlm/graph/verifier.h"
#include "staticlm/partition/alias_roots.h"
#include "staticlm/partition/method_checks.h"

namespace staticlm {
namespace {

Result<MethodSpec> lower_method(const MethodGraph& method, const std::map<ConstantId, uint32_t>& constant_index,
                                uint32_t alignment) {
  const Graph& graph = *method.graph;
  STATICLM_ASSIGN_OR_RETURN(MemoryPlan plan, plan_memory(graph, alignment));
  const std::vector<ValueId> root = alias_roots(graph);

  MethodSpec spec;
  spec.name = method.name;
  spec.arena_size = plan.arena_size;
  spec.arena_alignment = plan.alignment;

  std::map<ValueId, uint32_t> output_position;
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    const ValueId value = graph.outputs()[i].value;
    if (graph.value(root[static_cast<size_t>(value)]).kind == ValueKind::kInput) {
      return invalid_argument("method '", method.name, "': output '", graph.outputs()[i].name,
                              "' is an in-place update of an input; the caller already owns that memory");
    }
    const ValueId stored = root[static_cast<size_t>(value)];
    if (!output_position.emplace(stored, static_cast<uint32_t>(i)).second) {
      return invalid_argument("method '", method.name, "': output '", graph.outputs()[i].name,
                              "' shares its storage with another output");
    }
  }

  // Program value index of each graph value (aliases map to their root's index).
  std::vector<uint32_t> program_value(graph.num_values(), 0);
  for (size_t v = 0; v < graph.num_values(); ++v) {
    if (root[v] != static_cast<ValueId>(v)) {
      continue;
    }
    const GraphValue& value = graph.value(static_cast<ValueId>(v));
    ValueSpec out{value.dtype, value.shape, ValueStorage::kArena, 0};
    if (value.kind == ValueKind::kInput) {
      out.storage = ValueStorage::kInput;
      out.index = static_cast<uint64_t>(value.input_index);
    } else if (value.kind == ValueKind::kConstant) {
      out.storage = ValueStorage::kConstant;
      out.index = constant_index.at(value.constant);
    } else if (auto it = output_position.find(static_cast<ValueId>(v)); it != output_position.end()) {
      out.storage = ValueStorage::kOutput;
      out.index = it->second;
    } else {
      out.index = plan.values[v].offset;
    }
    program_value[v] = static_cast<uint32_t>(spec.values.size());
    spec.values.push_back(std::move(out));
  }
  for (size_t v = 0; v < graph.num_values(); ++v) {
    program_value[v] = program_value[static_cast<size_t>(root[v])];
  }

  std::set<int32_t> mutated_inputs;
  for (const GraphNode& node : graph.nodes()) {
    KernelCallSpec call;
    call.op = std::string(op_name(node.op));
    call.attributes = node.attributes;
    for (ValueId input : node.inputs) {
      call.inputs.push_back(input == kNoValue ? kAbsentValue
                                              : static_cast<int32_t>(program_value[static_cast<size_t>(input)]));
    }
    for (ValueId output : node.outputs) {
      call.outputs.push_back(program_value[static_cast<size_t>(output)]);
    }
    const int aliased = in_place_input(node.op, node.attributes);
    if (aliased >= 0) {
      const GraphValue& target = graph.value(root[static_cast<size_t>(node.inputs[static_cast<size_t>(aliased)])]);
      if (target.kind == ValueKind::kInput) {
        mutated_inputs.insert(target.input_index);
      }
    }
    spec.instructions.emplace_back(std::move(call));
  }
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const GraphInput& input = graph.inputs()[i];
    spec.inputs.push_back({input.name, program_value[static_cast<size_t>(input.value)],
                           mutated_inputs.count(static_cast<int32_t>(i)) != 0});
  }
  for (const GraphOutput& output : graph.outputs()) {
    spec.outputs.push_back({output.name, program_value[static_cast<size_t>(output.value)], false});
  }
  return spec;
}

}  // namespace

Result<ProgramSpec> lower_to_program(std::span<const MethodGraph> methods, const LowerOptions& options) {
  STATICLM_RETURN_IF_ERROR(check_method_graphs(methods));
  const ConstantTable* table = &methods[0].graph->constants();

  // Emit each constant some method reads, once, in table order.
  std::set<ConstantId> used;
  for (const MethodGraph& method : methods) {
    for (size_t v = 0; v < method.graph->num_values(); ++v) {
      const GraphValue& value = method.graph->value(static_cast<ValueId>(v));
      if (value.kind == ValueKind::kConstant) {
        used.insert(value.constant);
      }
    }
  }
  ProgramSpec spec;
  std::map<ConstantId, uint32_t> constant_index;
  for (ConstantId id : used) {
    const ConstantEntry& entry = table->at(id);
    constant_index[id] = static_cast<uint32_t>(spec.constants.size());
    spec.constants.push_back({entry.name, entry.dtype, entry.shape, entry.source});
  }
  for (const MethodGraph& method : methods) {
    STATICLM_ASSIGN_OR_RETURN(MethodSpec lowered, lower_method(method, constant_index, options.arena_alignment));
    spec.methods.push_back(std::move(lowered));
  }
  spec.metadata = options.metadata;
  spec.files = options.files;
  return spec;
}

}  // namespace staticlm
