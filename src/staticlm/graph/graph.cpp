// SPDX-License-Identifier: Apache-2.0
#include "staticlm/graph/graph.h"

#include <utility>

#include "staticlm/core/checked_math.h"

namespace staticlm {
namespace {

bool is_known_op(OpKind op) {
  return static_cast<size_t>(op) < all_ops().size();
}

bool is_constant_name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

}  // namespace

std::string sanitize_constant_name(std::string_view name) {
  if (name.empty()) {
    return "constant";
  }
  std::string out(name);
  for (char& c : out) {
    if (!is_constant_name_char(c)) {
      c = '_';
    }
  }
  return out;
}

Result<ConstantId> ConstantTable::add(std::string_view requested_name, DType dtype, Shape shape,
                                      std::shared_ptr<ByteSource> source) {
  auto expected_bytes = tensor_bytes(dtype, shape);
  if (!expected_bytes.ok()) {
    return expected_bytes.status().with_context(str_cat("constant '", requested_name, "'"));
  }
  if (source == nullptr) {
    return invalid_argument("constant '", requested_name, "': no byte source");
  }
  if (source->size_bytes() != *expected_bytes) {
    return invalid_argument("constant '", requested_name, "': source has ", source->size_bytes(), " bytes, expected ",
                            *expected_bytes, " for ", dtype_name(dtype), shape_string(shape));
  }

  const std::string base = sanitize_constant_name(requested_name);
  std::string name = base;
  for (uint64_t suffix = 1; by_name_.count(name) != 0; ++suffix) {
    name = str_cat(base, "_", suffix);
  }

  const auto id = static_cast<ConstantId>(entries_.size());
  entries_.push_back({name, dtype, std::move(shape), std::move(source)});
  by_name_.emplace(std::move(name), id);
  return id;
}

ConstantId ConstantTable::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

std::string describe_node(size_t index, OpKind op, std::string_view name) {
  const std::string op_text =
      is_known_op(op) ? str_cat("op '", op_name(op), "'") : str_cat("unknown op #", static_cast<int>(op));
  if (name.empty()) {
    return str_cat("node ", index, " (", op_text, ")");
  }
  return str_cat("node ", index, " (", op_text, ", name '", name, "')");
}

Graph::Graph(std::shared_ptr<ConstantTable> constants) : constants_(std::move(constants)) {
  if (constants_ == nullptr) {
    constants_ = std::make_shared<ConstantTable>();
  }
}

Result<ValueId> Graph::add_input(std::string name, DType dtype, Shape shape) {
  if (name.empty()) {
    return invalid_argument("graph input ", inputs_.size(), ": the name is empty");
  }
  for (const GraphInput& input : inputs_) {
    if (input.name == name) {
      return invalid_argument("graph input '", name, "': the name is already taken");
    }
  }
  auto bytes = tensor_bytes(dtype, shape);
  if (!bytes.ok()) {
    return bytes.status().with_context(str_cat("graph input '", name, "'"));
  }
  const auto id = static_cast<ValueId>(values_.size());
  GraphValue value;
  value.dtype = dtype;
  value.shape = std::move(shape);
  value.kind = ValueKind::kInput;
  value.input_index = static_cast<int32_t>(inputs_.size());
  values_.push_back(std::move(value));
  inputs_.push_back({std::move(name), id});
  return id;
}

Result<ValueId> Graph::use_constant(ConstantId id) {
  if (id < 0 || static_cast<size_t>(id) >= constants_->size()) {
    return out_of_range("constant id ", id, " is out of range (the table has ", constants_->size(), " constants)");
  }
  if (auto it = constant_values_.find(id); it != constant_values_.end()) {
    return it->second;
  }
  const ConstantEntry& entry = constants_->at(id);
  const auto value_id = static_cast<ValueId>(values_.size());
  GraphValue value;
  value.dtype = entry.dtype;
  value.shape = entry.shape;
  value.kind = ValueKind::kConstant;
  value.constant = id;
  values_.push_back(std::move(value));
  constant_values_.emplace(id, value_id);
  return value_id;
}

Result<std::vector<ValueId>> Graph::add_node(OpKind op, std::vector<ValueId> inputs, Attributes attributes,
                                             std::string name) {
  const size_t index = nodes_.size();
  const std::string label = describe_node(index, op, name);
  if (!is_known_op(op)) {
    return invalid_argument(label, ": not an op of the op set");
  }
  std::vector<TensorSpec> specs(inputs.size());
  std::vector<const TensorSpec*> spec_ptrs(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueId input = inputs[i];
    if (input == kNoValue) {
      continue;
    }
    if (input < 0 || static_cast<size_t>(input) >= values_.size()) {
      return invalid_argument(label, ": input ", i, " refers to value ", input,
                              ", which does not exist (the graph has ", values_.size(), " values)");
    }
    specs[i] = spec(input);
    spec_ptrs[i] = &specs[i];
  }
  auto inferred = infer_outputs(op, spec_ptrs, attributes);
  if (!inferred.ok()) {
    return inferred.status().with_context(label);
  }
  for (size_t i = 0; i < inferred->size(); ++i) {
    // An op may compute an output shape (a broadcast, a concat) that no tensor can have.
    if (!checked_num_elements((*inferred)[i].shape)) {
      return invalid_argument(label, ": output ", i, " would have the invalid shape ",
                              shape_string((*inferred)[i].shape));
    }
  }

  GraphNode node;
  node.op = op;
  node.inputs = std::move(inputs);
  node.attributes = std::move(attributes);
  node.name = std::move(name);
  for (TensorSpec& output : *inferred) {
    node.outputs.push_back(new_value(output.dtype, std::move(output.shape), static_cast<int32_t>(index)));
  }
  nodes_.push_back(std::move(node));
  return nodes_.back().outputs;
}

Result<ValueId> Graph::add(OpKind op, std::vector<ValueId> inputs, Attributes attributes, std::string name) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<ValueId> outputs,
                            add_node(op, std::move(inputs), std::move(attributes), std::move(name)));
  if (outputs.size() != 1) {
    return invalid_argument(describe_node(nodes_.size() - 1, op, nodes_.back().name), ": has ", outputs.size(),
                            " outputs; use add_node");
  }
  return outputs[0];
}

Status Graph::add_output(std::string name, ValueId value) {
  if (name.empty()) {
    return invalid_argument("graph output ", outputs_.size(), ": the name is empty");
  }
  if (value < 0 || static_cast<size_t>(value) >= values_.size()) {
    return invalid_argument("graph output '", name, "': value ", value, " does not exist (the graph has ",
                            values_.size(), " values)");
  }
  for (const GraphOutput& output : outputs_) {
    if (output.name == name) {
      return invalid_argument("graph output '", name, "': the name is already taken");
    }
  }
  outputs_.push_back({std::move(name), value});
  return ok_status();
}

std::vector<int> Graph::count_readers() const {
  std::vector<int> readers(values_.size(), 0);
  for (const GraphNode& node : nodes_) {
    for (ValueId input : node.inputs) {
      if (input != kNoValue) {
        ++readers[static_cast<size_t>(input)];
      }
    }
  }
  for (const GraphOutput& output : outputs_) {
    ++readers[static_cast<size_t>(output.value)];
  }
  return readers;
}

void Graph::replace_nodes(std::vector<GraphNode> nodes) {
  nodes_ = std::move(nodes);
  for (GraphValue& value : values_) {
    if (value.kind == ValueKind::kNodeOutput) {
      value.producer = -1;
    }
  }
  for (size_t n = 0; n < nodes_.size(); ++n) {
    for (ValueId output : nodes_[n].outputs) {
      if (output >= 0 && static_cast<size_t>(output) < values_.size()) {
        values_[static_cast<size_t>(output)].producer = static_cast<int32_t>(n);
      }
    }
  }
}

void Graph::replace_nodes(std::vector<GraphNode> nodes, const std::vector<bool>& dropped) {
  std::vector<GraphNode> kept;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (n >= dropped.size() || !dropped[n]) {
      kept.push_back(std::move(nodes[n]));
    }
  }
  replace_nodes(std::move(kept));
}

ValueId Graph::new_value(DType dtype, Shape shape, int32_t producer) {
  const auto id = static_cast<ValueId>(values_.size());
  GraphValue value;
  value.dtype = dtype;
  value.shape = std::move(shape);
  value.kind = ValueKind::kNodeOutput;
  value.producer = producer;
  values_.push_back(std::move(value));
  return id;
}

}  // namespace staticlm
