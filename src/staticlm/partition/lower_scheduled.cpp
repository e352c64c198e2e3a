// lower_scheduled_program: partitioned methods (kernel calls + delegate calls) to a ProgramSpec.
#include <map>
#include <set>

#include "staticlm/graph/verifier.h"
#include "staticlm/partition/alias_roots.h"
#include "staticlm/partition/method_checks.h"
#include "staticlm/partition/lower_program.h"
#include "staticlm/partition/step_memory_plan.h"

namespace staticlm {
namespace {

Status check_steps(const ScheduledMethod& method, size_t num_delegates) {
  const Graph& graph = *method.graph;
  std::vector<int> kernel_steps(graph.nodes().size(), 0);
  for (size_t s = 0; s < method.steps.size(); ++s) {
    const LoweringStep& step = method.steps[s];
    const std::string what = str_cat("method '", method.name, "' step ", s);
    if (step.node >= static_cast<int32_t>(graph.nodes().size())) {
      return invalid_argument(what, ": node ", step.node, " does not exist");
    }
    if (step.node >= 0) {
      ++kernel_steps[static_cast<size_t>(step.node)];
      continue;
    }
    if (step.delegate >= num_delegates) {
      return invalid_argument(what, ": delegate ", step.delegate, " does not exist");
    }
    for (const auto* values : {&step.inputs, &step.outputs}) {
      for (ValueId value : *values) {
        if (value < 0 || static_cast<size_t>(value) >= graph.num_values()) {
          return invalid_argument(what, ": value ", value, " does not exist");
        }
      }
    }
  }
  for (size_t n = 0; n < kernel_steps.size(); ++n) {
    if (kernel_steps[n] > 1) {
      return invalid_argument("method '", method.name, "': node ", n, " is scheduled twice");
    }
  }
  return ok_status();
}

class ScheduledLowering {
 public:
  ScheduledLowering(const ScheduledMethod& method, const std::map<ConstantId, uint32_t>& constant_index)
      : method_(method), graph_(*method.graph), constant_index_(constant_index), root_(alias_roots(graph_)) {}

  Result<MethodSpec> run(uint32_t alignment) {
    STATICLM_RETURN_IF_ERROR(assign_outputs());
    collect_needed_values();
    emit_values();
    STATICLM_RETURN_IF_ERROR(emit_instructions());
    STATICLM_RETURN_IF_ERROR(plan_arena(alignment));
    emit_io();
    return std::move(spec_);
  }

 private:
  ValueId root(ValueId value) const { return root_[static_cast<size_t>(value)]; }

  Status assign_outputs() {
    for (size_t i = 0; i < graph_.outputs().size(); ++i) {
      const GraphOutput& output = graph_.outputs()[i];
      if (graph_.value(root(output.value)).kind == ValueKind::kInput) {
        return invalid_argument("method '", method_.name, "': output '", output.name,
                                "' is an in-place update of an input; the caller already owns that memory");
      }
      if (!output_position_.emplace(root(output.value), static_cast<uint32_t>(i)).second) {
        return invalid_argument("method '", method_.name, "': output '", output.name,
                                "' shares its storage with another output");
      }
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
    for (const LoweringStep& step : method_.steps) {
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

  void emit_values() {
    spec_.name = method_.name;
    for (ValueId v : needed_) {
      const GraphValue& value = graph_.value(v);
      ValueSpec out{value.dtype, value.shape, ValueStorage::kArena, 0};
      if (value.kind == ValueKind::kInput) {
        out.storage = ValueStorage::kInput;
        out.index = static_cast<uint64_t>(value.input_index);
      } else if (value.kind == ValueKind::kConstant) {
        out.storage = ValueStorage::kConstant;
        out.index = constant_index_.at(value.constant);
      } else if (auto it = output_position_.find(v); it != output_position_.end()) {
        out.storage = ValueStorage::kOutput;
        out.index = it->second;
      }
      program_value_[v] = static_cast<uint32_t>(spec_.values.size());
      spec_.values.push_back(std::move(out));
    }
  }

  uint32_t program_value(ValueId value) const { return program_value_.at(root(value)); }

  void touch(uint32_t value, int32_t step) {
    if (spec_.values[value].storage != ValueStorage::kArena) {
      return;
    }
    auto [it, inserted] = lifetime_.emplace(value, StepBuffer{0, step, step});
    it->second.first_step = std::min(it->second.first_step, step);
    it->second.last_step = std::max(it->second.last_step, step);
  }

  Status emit_instructions() {
    for (size_t s = 0; s < method_.steps.size(); ++s) {
      const LoweringStep& step = method_.steps[s];
      const auto index = static_cast<int32_t>(s);
      if (step.node >= 0) {
        const GraphNode& node = graph_.nodes()[static_cast<size_t>(step.node)];
        KernelCallSpec call;
        call.op = std::string(op_name(node.op));
        call.attributes = node.attributes;
        for (ValueId input : node.inputs) {
          if (input == kNoValue) {
            call.inputs.push_back(kAbsentValue);
            continue;
          }
          call.inputs.push_back(static_cast<int32_t>(program_value(input)));
          touch(program_value(input), index);
        }
        for (ValueId output : node.outputs) {
          call.outputs.push_back(program_value(output));
          touch(program_value(output), index);
        }
        spec_.instructions.emplace_back(std::move(call));
        continue;
      }
      DelegateCallSpec call;
      call.delegate = step.delegate;
      for (ValueId input : step.inputs) {
        call.inputs.push_back(program_value(input));
        touch(program_value(input), index);
      }
      for (ValueId output : step.outputs) {
        call.outputs.push_back(program_value(output));
        touch(program_value(output), index);
      }
      spec_.instructions.emplace_back(std::move(call));
    }
    return ok_status();
  }

  Status plan_arena(uint32_t alignment) {
    std::vector<uint32_t> values;
    std::vector<StepBuffer> buffers;
    for (auto& [value, buffer] : lifetime_) {
      const ValueSpec& spec = spec_.values[value];
      auto bytes = tensor_bytes(spec.dtype, spec.shape);
      if (!bytes.ok()) {
        return resource_exhausted("method '", method_.name, "' value ", value, " (", dtype_name(spec.dtype),
                                  shape_string(spec.shape), "): byte size overflows 64 bits");
      }
      buffer.size = *bytes;
      values.push_back(value);
      buffers.push_back(buffer);
    }
    auto plan = plan_step_memory(buffers, alignment);
    if (!plan.ok()) {
      return plan.status().with_context(str_cat("method '", method_.name, "'"));
    }
    for (size_t i = 0; i < values.size(); ++i) {
      spec_.values[values[i]].index = plan->offsets[i];
    }
    spec_.arena_size = plan->arena_size;
    spec_.arena_alignment = alignment;
    return ok_status();
  }

  void emit_io() {
    std::set<int32_t> mutated_inputs;
    for (const GraphNode& node : graph_.nodes()) {
      const int aliased = in_place_input(node.op, node.attributes);
      if (aliased >= 0) {
        const GraphValue& target = graph_.value(root(node.inputs[static_cast<size_t>(aliased)]));
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
    for (const GraphOutput& output : graph_.outputs()) {
      spec_.outputs.push_back({output.name, program_value(output.value), false});
    }
  }

  const ScheduledMethod& method_;
  const Graph& graph_;
  const std::map<ConstantId, uint32_t>& constant_index_;
  std::vector<ValueId> root_;
  std::map<ValueId, uint32_t> output_position_;
  std::set<ValueId> needed_;
  std::map<ValueId, uint32_t> program_value_;
  std::map<uint32_t, StepBuffer> lifetime_;
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
  for (const LoweringStep& step : method.steps) {
    if (step.node >= 0) {
      for (ValueId v : graph.nodes()[static_cast<size_t>(step.node)].inputs) add(v);
    } else {
      for (ValueId v : step.inputs) add(v);
    }
  }
}

}  // namespace

Result<ProgramSpec> lower_scheduled_program(std::span<const ScheduledMethod> methods,
                                            std::vector<DelegateSpec> delegates, const LowerOptions& options) {
  STATICLM_RETURN_IF_ERROR(check_method_graphs(methods));
  const ConstantTable* table = &methods[0].graph->constants();
  std::set<ConstantId> used;
  for (const ScheduledMethod& method : methods) {
    STATICLM_RETURN_IF_ERROR(check_steps(method, delegates.size()));
    collect_constants(method, used);
  }
  ProgramSpec spec;
  std::map<ConstantId, uint32_t> constant_index;
  for (ConstantId id : used) {
    const ConstantEntry& entry = table->at(id);
    constant_index[id] = static_cast<uint32_t>(spec.constants.size());
    spec.constants.push_back({entry.name, entry.dtype, entry.shape, entry.source});
  }
  for (const ScheduledMethod& method : methods) {
    ScheduledLowering lowering(method, constant_index);
    STATICLM_ASSIGN_OR_RETURN(MethodSpec lowered, lowering.run(options.arena_alignment));
    spec.methods.push_back(std::move(lowered));
  }
  spec.delegates = std::move(delegates);
  spec.metadata = options.metadata;
  spec.files = options.files;
  return spec;
}

}  // namespace staticlm
