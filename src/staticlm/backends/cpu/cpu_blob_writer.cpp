// write_cpu_blob (cpu_blob.h).
#include <map>

#include "staticlm/backends/cpu/cpu_blob.h"
#include "staticlm/backends/cpu/cpu_delegate_generated.h"
#include "staticlm/graph/memory_planner.h"

namespace staticlm {
namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

Offset<staticlm::fb::Attribute> build_attribute(FlatBufferBuilder& builder, const std::string& name,
                                                const AttrValue& value) {
  auto name_offset = builder.CreateString(name);
  int64_t int_value = 0;
  double float_value = 0.0;
  Offset<flatbuffers::String> string_value;
  Offset<flatbuffers::Vector<int64_t>> int_list;
  auto type = staticlm::fb::AttributeType::Int;
  if (const auto* i = std::get_if<int64_t>(&value)) {
    int_value = *i;
  } else if (const auto* f = std::get_if<double>(&value)) {
    type = staticlm::fb::AttributeType::Float;
    float_value = *f;
  } else if (const auto* s = std::get_if<std::string>(&value)) {
    type = staticlm::fb::AttributeType::String;
    string_value = builder.CreateString(*s);
  } else {
    type = staticlm::fb::AttributeType::IntList;
    int_list = builder.CreateVector(std::get<std::vector<int64_t>>(value));
  }
  return staticlm::fb::CreateAttribute(builder, name_offset, type, int_value, float_value, string_value, int_list);
}

}  // namespace

Result<std::vector<uint8_t>> write_cpu_blob(const Graph& graph, std::span<const ConstantId> runtime_constants,
                                            std::span<const uint32_t> output_order) {
  const size_t num_outputs = graph.outputs().size();
  // internal_position[j]: where subgraph output j sits in the delegate's own output order.
  std::vector<uint32_t> internal_position(num_outputs);
  if (output_order.empty()) {
    for (size_t j = 0; j < num_outputs; ++j) internal_position[j] = static_cast<uint32_t>(j);
  } else {
    std::vector<bool> seen(num_outputs, false);
    if (output_order.size() != num_outputs) {
      return invalid_argument("cpu blob: output_order has ", output_order.size(), " entries for ", num_outputs,
                              " outputs");
    }
    for (size_t i = 0; i < output_order.size(); ++i) {
      if (output_order[i] >= num_outputs || seen[output_order[i]]) {
        return invalid_argument("cpu blob: output_order is not a permutation of [0, ", num_outputs, ")");
      }
      seen[output_order[i]] = true;
      internal_position[output_order[i]] = static_cast<uint32_t>(i);
    }
  }
  STATICLM_ASSIGN_OR_RETURN(MemoryPlan plan, plan_memory(graph, 64));
  auto root = [&](ValueId v) {
    const ValueId alias = plan.values[static_cast<size_t>(v)].alias_root;
    return alias == kNoValue ? v : alias;
  };
  std::map<ValueId, uint32_t> output_of_root;
  for (size_t j = 0; j < num_outputs; ++j) {
    output_of_root.emplace(root(graph.outputs()[j].value), internal_position[j]);
  }
  std::map<ConstantId, uint32_t> constant_input;
  for (size_t k = 0; k < runtime_constants.size(); ++k) {
    constant_input.emplace(runtime_constants[k], static_cast<uint32_t>(graph.inputs().size() + k));
  }

  FlatBufferBuilder builder;
  std::vector<Offset<cpu::fb::Value>> values;
  std::vector<uint32_t> blob_value(graph.num_values(), 0);
  for (size_t v = 0; v < graph.num_values(); ++v) {
    const auto id = static_cast<ValueId>(v);
    if (root(id) != id) {
      continue;
    }
    const GraphValue& value = graph.value(id);
    auto storage = cpu::fb::Storage::Arena;
    uint64_t index = 0;
    if (value.kind == ValueKind::kInput) {
      storage = cpu::fb::Storage::Input;
      index = static_cast<uint64_t>(value.input_index);
    } else if (value.kind == ValueKind::kConstant) {
      auto it = constant_input.find(value.constant);
      if (it == constant_input.end()) {
        return invalid_argument("cpu blob: constant '", graph.constants().at(value.constant).name,
                                "' is read but not passed to the delegate");
      }
      storage = cpu::fb::Storage::Input;
      index = it->second;
    } else if (auto it = output_of_root.find(id); it != output_of_root.end()) {
      storage = cpu::fb::Storage::Output;
      index = it->second;
    } else if (plan.values[v].in_arena) {
      index = plan.values[v].offset;
    } else {
      return internal_error("cpu blob: value ", v, " has no storage in the plan");
    }
    blob_value[v] = static_cast<uint32_t>(values.size());
    values.push_back(cpu::fb::CreateValue(builder, static_cast<uint8_t>(value.dtype), builder.CreateVector(value.shape),
                                          storage, index));
  }
  for (size_t v = 0; v < graph.num_values(); ++v) {
    blob_value[v] = blob_value[static_cast<size_t>(root(static_cast<ValueId>(v)))];
  }

  std::vector<Offset<cpu::fb::Node>> nodes;
  for (const GraphNode& node : graph.nodes()) {
    std::vector<int32_t> inputs;
    for (ValueId input : node.inputs) {
      inputs.push_back(input == kNoValue ? -1 : static_cast<int32_t>(blob_value[static_cast<size_t>(input)]));
    }
    std::vector<uint32_t> outputs;
    for (ValueId output : node.outputs) {
      outputs.push_back(blob_value[static_cast<size_t>(output)]);
    }
    std::vector<Offset<staticlm::fb::Attribute>> attributes;
    for (const auto& [name, value] : node.attributes.entries()) {
      attributes.push_back(build_attribute(builder, name, value));
    }
    nodes.push_back(cpu::fb::CreateNode(builder, builder.CreateString(op_name(node.op)), builder.CreateVector(inputs),
                                        builder.CreateVector(outputs), builder.CreateVector(attributes)));
  }
  auto delegate = cpu::fb::CreateDelegate(builder, kCpuBlobVersion, builder.CreateVector(values),
                                          builder.CreateVector(nodes), plan.arena_size, plan.alignment);
  cpu::fb::FinishDelegateBuffer(builder, delegate);
  return std::vector<uint8_t>(builder.GetBufferPointer(), builder.GetBufferPointer() + builder.GetSize());
}

}  // namespace staticlm
