// SPDX-License-Identifier: Apache-2.0
// Graph: the export-time IR of one method. Values have a dtype and a static shape; nodes apply
// one op of the closed op set (ops/op_set.h) to values and define new ones. Constants live in
// a ConstantTable that several graphs (a program's methods) share, so a weight used by both
// prefill and decode — or twice in one graph, like tied embeddings — is one constant.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/byte_source.h"
#include "staticlm/core/result.h"
#include "staticlm/core/tensor.h"
#include "staticlm/ops/attributes.h"
#include "staticlm/ops/op_set.h"

namespace staticlm {

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;
using ConstantId = int32_t;

struct ConstantEntry {
  std::string name;  // unique within the table
  DType dtype = DType::kF32;
  Shape shape;
  std::shared_ptr<ByteSource> source;
  // An embedding table that is also the output head (tied), in this graph or another of the
  // program: a method without the head (the embeddings method) gathers from what the head's
  // format stores, as the methods with it do.
  bool tied_head = false;
};

// Named constants shared by the graphs of one program. Names are unique and stable: add()
// sanitizes the requested name to [A-Za-z0-9_.] and, when that name is taken, appends the
// smallest free suffix "_1", "_2", ... so two sources never alias one constant by accident.
class ConstantTable {
 public:
  // Fails with InvalidArgument when the source's byte size does not match dtype x shape.
  Result<ConstantId> add(std::string_view requested_name, DType dtype, Shape shape, std::shared_ptr<ByteSource> source);
  const ConstantEntry& at(ConstantId id) const { return entries_[static_cast<size_t>(id)]; }
  size_t size() const { return entries_.size(); }
  std::span<const ConstantEntry> entries() const { return entries_; }
  // The id of the constant called exactly `name`, or -1.
  ConstantId find(std::string_view name) const;
  void mark_tied_head(ConstantId id) { entries_[static_cast<size_t>(id)].tied_head = true; }

 private:
  std::vector<ConstantEntry> entries_;
  std::map<std::string, ConstantId, std::less<>> by_name_;
};

// Maps every character outside [A-Za-z0-9_.] to '_'; an empty name becomes "constant".
std::string sanitize_constant_name(std::string_view name);

enum class ValueKind : uint8_t { kInput, kConstant, kNodeOutput };

struct GraphValue {
  DType dtype = DType::kF32;
  Shape shape;
  ValueKind kind = ValueKind::kNodeOutput;
  int32_t producer = -1;     // node index for kNodeOutput
  ConstantId constant = -1;  // for kConstant
  int32_t input_index = -1;  // for kInput
};

struct GraphNode {
  OpKind op = OpKind::kAdd;
  std::vector<ValueId> inputs;  // kNoValue for an absent optional input
  std::vector<ValueId> outputs;
  Attributes attributes;
  std::string name;  // optional, for reports
};

// "node 3 (op 'add')", or "node 3 (op 'add', name 'layers.0.mlp')" for a named node: how
// the builder, the verifier and the planner name a node in their messages.
std::string describe_node(size_t index, OpKind op, std::string_view name);

struct GraphInput {
  std::string name;
  ValueId value = kNoValue;
};

struct GraphOutput {
  std::string name;
  ValueId value = kNoValue;
};

class Graph {
 public:
  explicit Graph(std::shared_ptr<ConstantTable> constants);

  // Declares a graph input. Fails when the name is taken or the shape is invalid.
  Result<ValueId> add_input(std::string name, DType dtype, Shape shape);
  // A value reading constant `id` (one value per constant: asking twice returns the same id).
  Result<ValueId> use_constant(ConstantId id);
  // Appends a node; its outputs are inferred with infer_outputs. Fails with InvalidArgument
  // naming the op and the problem when the inputs do not type-check.
  Result<std::vector<ValueId>> add_node(OpKind op, std::vector<ValueId> inputs, Attributes attributes = {},
                                        std::string name = {});
  // Convenience for single-output ops.
  Result<ValueId> add(OpKind op, std::vector<ValueId> inputs, Attributes attributes = {}, std::string name = {});
  // Marks `value` as a graph output called `name`.
  Status add_output(std::string name, ValueId value);

  const GraphValue& value(ValueId id) const { return values_[static_cast<size_t>(id)]; }
  TensorSpec spec(ValueId id) const { return {value(id).dtype, value(id).shape}; }
  size_t num_values() const { return values_.size(); }
  std::span<const GraphNode> nodes() const { return nodes_; }
  std::span<const GraphInput> inputs() const { return inputs_; }
  std::span<const GraphOutput> outputs() const { return outputs_; }
  const ConstantTable& constants() const { return *constants_; }
  ConstantTable& mutable_constants() { return *constants_; }
  const std::shared_ptr<ConstantTable>& constant_table() const { return constants_; }

  // For passes: replaces the node list wholesale (values referenced must exist). The verifier
  // should be run afterwards.
  std::vector<GraphNode>& mutable_nodes() { return nodes_; }
  // For passes: installs `nodes` as the node list and makes every value's producer the node that
  // now outputs it (-1 for a value no node outputs any more). The verifier should run afterwards.
  void replace_nodes(std::vector<GraphNode> nodes);
  // The same, leaving out node n of `nodes` wherever dropped[n] (a fusion's folded nodes).
  void replace_nodes(std::vector<GraphNode> nodes, const std::vector<bool>& dropped);
  // For passes: how many readers each value has (node inputs and graph outputs), by value id.
  std::vector<int> count_readers() const;
  // For passes: the node producing `value`, or -1 for a graph input, a constant or a value no
  // node outputs.
  int32_t producer_of(ValueId value) const {
    const GraphValue& v = this->value(value);
    return v.kind == ValueKind::kNodeOutput ? v.producer : -1;
  }
  // For passes: whether `value` exists before node `position` runs (a graph input, a constant, or
  // the output of an earlier node), so a node moved to `position` may read it.
  bool defined_before(ValueId value, size_t position) const {
    const int32_t producer = producer_of(value);
    return this->value(value).kind != ValueKind::kNodeOutput ||
           (producer >= 0 && static_cast<size_t>(producer) < position);
  }
  // For passes: a fresh value with the given spec, produced by node `producer`.
  ValueId new_value(DType dtype, Shape shape, int32_t producer);
  std::vector<GraphValue>& mutable_values() { return values_; }
  std::vector<GraphOutput>& mutable_outputs() { return outputs_; }

 private:
  std::shared_ptr<ConstantTable> constants_;
  std::vector<GraphValue> values_;
  std::vector<GraphNode> nodes_;
  std::vector<GraphInput> inputs_;
  std::vector<GraphOutput> outputs_;
  std::map<ConstantId, ValueId> constant_values_;
};

}  // namespace staticlm
