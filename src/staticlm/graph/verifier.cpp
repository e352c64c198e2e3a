// SPDX-License-Identifier: Apache-2.0
#include "staticlm/graph/verifier.h"

#include <set>
#include <string>
#include <vector>

#include "staticlm/core/checked_math.h"

namespace staticlm {
namespace {

std::string spec_string(DType dtype, const Shape& shape) {
  return str_cat(dtype_name(dtype), shape_string(shape));
}

class GraphVerifier {
 public:
  explicit GraphVerifier(const Graph& graph) : graph_(graph), producer_of_(graph.num_values(), -1) {}

  Status run() {
    STATICLM_RETURN_IF_ERROR(check_inputs());
    STATICLM_RETURN_IF_ERROR(check_values());
    STATICLM_RETURN_IF_ERROR(collect_producers());
    readers_.assign(graph_.num_values(), {});
    for (size_t i = 0; i < graph_.nodes().size(); ++i) {
      STATICLM_RETURN_IF_ERROR(check_node(i));
    }
    for (size_t i = 0; i < graph_.nodes().size(); ++i) {
      STATICLM_RETURN_IF_ERROR(check_in_place(i));
    }
    return check_outputs();
  }

 private:
  bool in_range(ValueId value) const { return value >= 0 && static_cast<size_t>(value) < graph_.num_values(); }

  std::string node_label(size_t index) const {
    const GraphNode& node = graph_.nodes()[index];
    return describe_node(index, node.op, node.name);
  }

  Status check_inputs() const {
    std::set<std::string_view> names;
    for (size_t i = 0; i < graph_.inputs().size(); ++i) {
      const GraphInput& input = graph_.inputs()[i];
      if (!names.insert(input.name).second) {
        return invalid_argument("graph input ", i, " '", input.name, "': the name is used twice");
      }
      if (!in_range(input.value)) {
        return invalid_argument("graph input ", i, " '", input.name, "': value ", input.value, " does not exist");
      }
      const GraphValue& value = graph_.value(input.value);
      if (value.kind != ValueKind::kInput || value.input_index != static_cast<int32_t>(i)) {
        return invalid_argument("graph input ", i, " '", input.name, "': value ", input.value,
                                " is not marked as graph input ", i);
      }
    }
    return ok_status();
  }

  Status check_values() const {
    const ConstantTable& constants = graph_.constants();
    for (size_t v = 0; v < graph_.num_values(); ++v) {
      const GraphValue& value = graph_.value(static_cast<ValueId>(v));
      if (!checked_num_elements(value.shape)) {
        return invalid_argument("value ", v, ": invalid shape ", shape_string(value.shape));
      }
      if (value.kind == ValueKind::kInput) {
        const int32_t index = value.input_index;
        if (index < 0 || static_cast<size_t>(index) >= graph_.inputs().size() ||
            graph_.inputs()[static_cast<size_t>(index)].value != static_cast<ValueId>(v)) {
          return invalid_argument("value ", v, ": marked as graph input ", index, ", which does not refer to it");
        }
      } else if (value.kind == ValueKind::kConstant) {
        if (value.constant < 0 || static_cast<size_t>(value.constant) >= constants.size()) {
          return invalid_argument("value ", v, ": constant ", value.constant, " does not exist (the table has ",
                                  constants.size(), ")");
        }
        const ConstantEntry& entry = constants.at(value.constant);
        if (entry.dtype != value.dtype || entry.shape != value.shape) {
          return invalid_argument("value ", v, ": constant '", entry.name, "' is ",
                                  spec_string(entry.dtype, entry.shape), ", the value says ",
                                  spec_string(value.dtype, value.shape));
        }
      }
    }
    return ok_status();
  }

  Status collect_producers() {
    for (size_t i = 0; i < graph_.nodes().size(); ++i) {
      const GraphNode& node = graph_.nodes()[i];
      for (size_t k = 0; k < node.outputs.size(); ++k) {
        const ValueId output = node.outputs[k];
        if (!in_range(output)) {
          return invalid_argument(node_label(i), ": output ", k, " refers to value ", output, ", which does not exist");
        }
        const GraphValue& value = graph_.value(output);
        if (value.kind != ValueKind::kNodeOutput) {
          return invalid_argument(node_label(i), ": output ", k, " is value ", output,
                                  ", which is a graph input or a constant");
        }
        if (producer_of_[static_cast<size_t>(output)] >= 0) {
          return invalid_argument(node_label(i), ": output ", k, " is value ", output, ", already defined by ",
                                  node_label(static_cast<size_t>(producer_of_[static_cast<size_t>(output)])));
        }
        if (value.producer != static_cast<int32_t>(i)) {
          return invalid_argument(node_label(i), ": output ", k, " is value ", output, ", which records node ",
                                  value.producer, " as its producer");
        }
        producer_of_[static_cast<size_t>(output)] = static_cast<int32_t>(i);
      }
    }
    return ok_status();
  }

  Status check_node(size_t index) {
    const GraphNode& node = graph_.nodes()[index];
    const std::string label = node_label(index);
    if (static_cast<size_t>(node.op) >= all_ops().size()) {
      return invalid_argument(label, ": not an op of the op set");
    }
    std::vector<const TensorSpec*> spec_ptrs(node.inputs.size(), nullptr);
    std::vector<TensorSpec> specs(node.inputs.size());
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const ValueId input = node.inputs[k];
      if (input == kNoValue) {
        continue;
      }
      if (!in_range(input)) {
        return invalid_argument(label, ": input ", k, " refers to value ", input,
                                ", which does not exist (the graph has ", graph_.num_values(), " values)");
      }
      if (graph_.value(input).kind == ValueKind::kNodeOutput) {
        const int32_t producer = producer_of_[static_cast<size_t>(input)];
        if (producer < 0) {
          return invalid_argument(label, ": input ", k, " reads value ", input, ", which no node produces");
        }
        if (producer >= static_cast<int32_t>(index)) {
          return invalid_argument(label, ": input ", k, " reads value ", input, " before ",
                                  node_label(static_cast<size_t>(producer)),
                                  " defines it (nodes must be in topological order, so a cycle is refused)");
        }
      }
      if (readers_[static_cast<size_t>(input)].empty() || readers_[static_cast<size_t>(input)].back() != index) {
        readers_[static_cast<size_t>(input)].push_back(index);
      }
      specs[k] = graph_.spec(input);
      spec_ptrs[k] = &specs[k];
    }

    auto inferred = infer_outputs(node.op, spec_ptrs, node.attributes);
    if (!inferred.ok()) {
      return inferred.status().with_context(label);
    }
    if (inferred->size() != node.outputs.size()) {
      return invalid_argument(label, ": has ", node.outputs.size(), " outputs, the op defines ", inferred->size());
    }
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      const TensorSpec& expected = (*inferred)[k];
      const GraphValue& actual = graph_.value(node.outputs[k]);
      if (actual.dtype != expected.dtype || actual.shape != expected.shape) {
        return invalid_argument(label, ": output ", k, " (value ", node.outputs[k], ") is ",
                                spec_string(actual.dtype, actual.shape), ", but its inputs give ",
                                spec_string(expected.dtype, expected.shape));
      }
    }
    return ok_status();
  }

  // An in-place op overwrites its aliased inputs, so no one may observe them afterwards.
  Status check_in_place(size_t index) const {
    const GraphNode& node = graph_.nodes()[index];
    for (const InPlaceUpdate& update : in_place_updates(node.op, node.attributes)) {
      STATICLM_RETURN_IF_ERROR(check_in_place_update(index, update));
    }
    return ok_status();
  }

  Status check_in_place_update(size_t index, const InPlaceUpdate& update) const {
    const GraphNode& node = graph_.nodes()[index];
    const std::string label = node_label(index);
    if (update.input >= node.inputs.size() || node.inputs[update.input] == kNoValue ||
        update.output >= node.outputs.size()) {
      return invalid_argument(label, ": an in-place op needs its input ", update.input, " and its output ",
                              update.output);
    }
    const ValueId target = node.inputs[update.input];
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      if (k != update.input && node.inputs[k] == target) {
        return invalid_argument(label, ": updates value ", target, " in place and also reads it as input ", k);
      }
    }
    for (size_t reader : readers_[static_cast<size_t>(target)]) {
      if (reader > index) {
        return invalid_argument(label, ": updates value ", target, " in place, but ", node_label(reader),
                                " reads it afterwards");
      }
    }
    for (const GraphOutput& output : graph_.outputs()) {
      if (output.value == target) {
        return invalid_argument(label, ": updates value ", target, " in place, but graph output '", output.name,
                                "' is that value; make the output the node's result (value ",
                                node.outputs[update.output], ")");
      }
    }
    return ok_status();
  }

  Status check_outputs() const {
    std::set<std::string_view> names;
    std::set<ValueId> values;
    for (size_t i = 0; i < graph_.outputs().size(); ++i) {
      const GraphOutput& output = graph_.outputs()[i];
      const std::string label = str_cat("graph output ", i, " '", output.name, "'");
      if (output.name.empty()) {
        return invalid_argument(label, ": the name is empty");
      }
      if (!names.insert(output.name).second) {
        return invalid_argument(label, ": the name is used twice");
      }
      if (!in_range(output.value)) {
        return invalid_argument(label, ": value ", output.value, " does not exist");
      }
      const GraphValue& value = graph_.value(output.value);
      if (value.kind == ValueKind::kInput) {
        return invalid_argument(label, ": value ", output.value, " is graph input '",
                                graph_.inputs()[static_cast<size_t>(value.input_index)].name,
                                "'; outputs must be node outputs");
      }
      if (value.kind == ValueKind::kConstant) {
        return invalid_argument(label, ": value ", output.value, " is constant '",
                                graph_.constants().at(value.constant).name, "'; outputs must be node outputs");
      }
      if (producer_of_[static_cast<size_t>(output.value)] < 0) {
        return invalid_argument(label, ": value ", output.value, " is not produced by any node");
      }
      if (!values.insert(output.value).second) {
        return invalid_argument(label, ": value ", output.value, " is already another graph output");
      }
    }
    return ok_status();
  }

  const Graph& graph_;
  std::vector<int32_t> producer_of_;          // node index, or -1
  std::vector<std::vector<size_t>> readers_;  // node indices reading each value, ascending
};

}  // namespace

Status verify_graph(const Graph& graph) {
  return GraphVerifier(graph).run();
}

}  // namespace staticlm
