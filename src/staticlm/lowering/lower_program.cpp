// SPDX-License-Identifier: Apache-2.0
#include "staticlm/lowering/lower_program.h"

#include <set>

#include "staticlm/graph/alias_roots.h"
#include "staticlm/graph/verifier.h"

namespace staticlm {
namespace {

Status check_steps(const ScheduledMethod& method) {
  const Graph& graph = *method.graph;
  std::vector<int> kernel_steps(graph.nodes().size(), 0);
  for (size_t s = 0; s < method.steps.size(); ++s) {
    const ScheduleStep& step = method.steps[s];
    if (step.node >= static_cast<int32_t>(graph.nodes().size())) {
      return invalid_argument("method '", method.name, "' step ", s, ": node ", step.node, " does not exist");
    }
    if (step.node >= 0 && ++kernel_steps[static_cast<size_t>(step.node)] > 1) {
      return invalid_argument("method '", method.name, "': node ", step.node, " is scheduled twice");
    }
    if (step.node < 0 && s >= method.step_delegate.size()) {
      return invalid_argument("method '", method.name, "' step ", s, ": a delegate step without a delegate");
    }
  }
  return ok_status();
}

// Lowers one scheduled method; see lower_program.h.
class MethodLowering {
 public:
  MethodLowering(const ScheduledMethod& method, const MethodLoweringOptions& options)
      : method_(method), graph_(*method.graph), options_(options), root_(alias_roots(graph_)) {}

  Result<MethodSpec> run() {
    STATICLM_ASSIGN_OR_RETURN(plan_, plan_memory(graph_, method_.steps, options_.arena_alignment));
    STATICLM_RETURN_IF_ERROR(assign_outputs());
    collect_needed_values();
    STATICLM_RETURN_IF_ERROR(emit_values());
    emit_instructions();
    emit_io();
    spec_.arena_size = plan_.arena_size;
    spec_.arena_alignment = plan_.alignment;
    return std::move(spec_);
  }

 private:
  ValueId root(ValueId value) const { return root_[static_cast<size_t>(value)]; }

  Status assign_outputs() {
    const size_t count = graph_.outputs().size();
    std::vector<uint32_t> order = options_.output_order;
    if (order.empty()) {
      for (size_t i = 0; i < count; ++i) order.push_back(static_cast<uint32_t>(i));
    }
    std::vector<bool> seen(count, false);
    if (order.size() != count) {
      return invalid_argument("method '", method_.name, "': output order has ", order.size(), " entries for ", count,
                              " outputs");
    }
    for (size_t position = 0; position < order.size(); ++position) {
      if (order[position] >= count || seen[order[position]]) {
        return invalid_argument("method '", method_.name, "': output order is not a permutation of [0, ", count, ")");
      }
      seen[order[position]] = true;
      const GraphOutput& output = graph_.outputs()[order[position]];
      if (graph_.value(root(output.value)).kind == ValueKind::kInput) {
        return invalid_argument("method '", method_.name, "': output '", output.name,
                                "' is an in-place update of an input; the caller already owns that memory");
      }
      if (!output_position_.emplace(root(output.value), static_cast<uint32_t>(position)).second) {
        return invalid_argument("method '", method_.name, "': output '", output.name,
                                "' shares its storage with another output");
      }
      outputs_in_order_.push_back(&output);
    }
    return ok_status();
  }

  void mark(ValueId value) {
    if (value != kNoValue) {
      needed_.insert(root(value));
    }
  }

  void collect_needed_values() {
    for (const GraphInput& input : graph_.inputs()) mark(input.value);
    for (const GraphOutput& output : graph_.outputs()) mark(output.value);
    for (const ScheduleStep& step : method_.steps) {
      if (step.node >= 0) {
        const GraphNode& node = graph_.nodes()[static_cast<size_t>(step.node)];
        for (ValueId v : node.inputs) mark(v);
        for (ValueId v : node.outputs) mark(v);
      } else {
        for (ValueId v : step.inputs) mark(v);
        for (ValueId v : step.outputs) mark(v);
      }
    }
  }

  Status emit_values() {
    spec_.name = method_.name;
    for (ValueId v : needed_) {
      const GraphValue& value = graph_.value(v);
      ValueSpec out{value.dtype, value.shape, ValueStorage::kArena, 0, {}};
      if (value.kind == ValueKind::kInput) {
        out.storage = ValueStorage::kInput;
        out.index = static_cast<uint64_t>(value.input_index);
      } else if (value.kind == ValueKind::kConstant) {
        const ConstantLowering& constants = options_.constants;
        if (constants.program_index != nullptr) {
          out.storage = ValueStorage::kConstant;
          out.index = constants.program_index->at(value.constant);
        } else {
          out.storage = ValueStorage::kNamedData;
          out.key = constants.named_data_key ? constants.named_data_key(value.constant)
                                             : graph_.constants().at(value.constant).name;
        }
      } else if (auto it = output_position_.find(v); it != output_position_.end()) {
        out.storage = ValueStorage::kOutput;
        out.index = it->second;
      } else {
        const PlannedValue& planned = plan_.values[static_cast<size_t>(v)];
        if (!planned.in_arena) {
          return internal_error("method '", method_.name, "': value ", v, " is touched but has no arena bytes");
        }
        out.index = planned.offset;
      }
      program_value_[v] = static_cast<uint32_t>(spec_.values.size());
      spec_.values.push_back(std::move(out));
    }
    return ok_status();
  }

  uint32_t program_value(ValueId value) const { return program_value_.at(root(value)); }

  void emit_instructions() {
    for (size_t s = 0; s < method_.steps.size(); ++s) {
      const ScheduleStep& step = method_.steps[s];
      if (step.node >= 0) {
        const GraphNode& node = graph_.nodes()[static_cast<size_t>(step.node)];
        KernelCallSpec call;
        call.op = std::string(op_name(node.op));
        call.attributes = node.attributes;
        for (ValueId input : node.inputs) {
          call.inputs.push_back(input == kNoValue ? kAbsentValue : static_cast<int32_t>(program_value(input)));
        }
        for (ValueId output : node.outputs) {
          call.outputs.push_back(program_value(output));
        }
        spec_.instructions.emplace_back(std::move(call));
        continue;
      }
      DelegateCallSpec call;
      call.delegate = method_.step_delegate[s];
      for (ValueId input : step.inputs) call.inputs.push_back(program_value(input));
      for (ValueId output : step.outputs) call.outputs.push_back(program_value(output));
      spec_.instructions.emplace_back(std::move(call));
    }
  }

  void emit_io() {
    std::set<int32_t> mutated_inputs;
    for (const GraphNode& node : graph_.nodes()) {
      for (const InPlaceUpdate& update : in_place_updates(node.op, node.attributes)) {
        const GraphValue& target = graph_.value(root(node.inputs[update.input]));
        if (target.kind == ValueKind::kInput) {
          mutated_inputs.insert(target.input_index);
        }
      }
    }
    for (size_t i = 0; i < graph_.inputs().size(); ++i) {
      const GraphInput& input = graph_.inputs()[i];
      spec_.inputs.push_back(
          {input.name, program_value(input.value), mutated_inputs.count(static_cast<int32_t>(i)) != 0});
    }
    for (const GraphOutput* output : outputs_in_order_) {
      spec_.outputs.push_back({output->name, program_value(output->value), false});
    }
  }

  const ScheduledMethod& method_;
  const Graph& graph_;
  const MethodLoweringOptions& options_;
  std::vector<ValueId> root_;
  MemoryPlan plan_;
  std::map<ValueId, uint32_t> output_position_;
  std::vector<const GraphOutput*> outputs_in_order_;
  std::set<ValueId> needed_;
  std::map<ValueId, uint32_t> program_value_;
  MethodSpec spec_;
};

// The constants a method's steps read: kernel-call inputs and delegate-call inputs.
void collect_constants(const ScheduledMethod& method, std::set<ConstantId>& used) {
  const Graph& graph = *method.graph;
  auto add = [&](ValueId v) {
    if (v != kNoValue && graph.value(v).kind == ValueKind::kConstant) {
      used.insert(graph.value(v).constant);
    }
  };
  for (const ScheduleStep& step : method.steps) {
    if (step.node >= 0) {
      for (ValueId v : graph.nodes()[static_cast<size_t>(step.node)].inputs) add(v);
    } else {
      for (ValueId v : step.inputs) add(v);
    }
  }
}

}  // namespace

Result<MethodSpec> lower_method(const ScheduledMethod& method, const MethodLoweringOptions& options) {
  Status verified = verify_graph(*method.graph);
  if (!verified.ok()) {
    return verified.with_context(str_cat("method '", method.name, "'"));
  }
  STATICLM_RETURN_IF_ERROR(check_steps(method));
  return MethodLowering(method, options).run();
}

Result<ProgramSpec> lower_program(std::span<const ScheduledMethod> methods, std::vector<DelegateSpec> delegates,
                                  std::vector<NamedDataSpec> named_data, const LowerOptions& options) {
  if (methods.empty()) {
    return invalid_argument("a program needs at least one method");
  }
  const ConstantTable* table = &methods[0].graph->constants();
  std::set<ConstantId> used;
  for (const ScheduledMethod& method : methods) {
    if (&method.graph->constants() != table) {
      return invalid_argument("method '", method.name, "' uses a different constant table than method '",
                              methods[0].name, "'; a program's methods must share one");
    }
    for (size_t s = 0; s < method.steps.size(); ++s) {
      if (method.steps[s].node < 0 &&
          (s >= method.step_delegate.size() || method.step_delegate[s] >= delegates.size())) {
        return invalid_argument("method '", method.name, "' step ", s, ": its delegate does not exist");
      }
    }
    collect_constants(method, used);
  }
  ProgramSpec spec;
  std::map<ConstantId, uint32_t> constant_index;
  for (ConstantId id : used) {
    const ConstantEntry& entry = table->at(id);
    constant_index[id] = static_cast<uint32_t>(spec.constants.size());
    spec.constants.push_back({entry.name, entry.dtype, entry.shape, entry.source});
  }
  MethodLoweringOptions method_options;
  method_options.constants.program_index = &constant_index;
  method_options.arena_alignment = options.arena_alignment;
  for (const ScheduledMethod& method : methods) {
    STATICLM_ASSIGN_OR_RETURN(MethodSpec lowered, lower_method(method, method_options));
    spec.methods.push_back(std::move(lowered));
  }
  spec.delegates = std::move(delegates);
  spec.named_data = std::move(named_data);
  spec.metadata = options.metadata;
  spec.files = options.files;
  return spec;
}

Result<ProgramSpec> lower_to_program(std::span<const MethodGraph> methods, const LowerOptions& options) {
  std::vector<ScheduledMethod> scheduled;
  for (const MethodGraph& method : methods) {
    scheduled.push_back({method.name, method.graph, one_step_per_node(*method.graph), {}});
  }
  return lower_program(scheduled, {}, {}, options);
}

}  // namespace staticlm
