// SPDX-License-Identifier: Apache-2.0
#include "staticlm/graph/memory_planner.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "staticlm/core/checked_math.h"
#include "staticlm/graph/alias_roots.h"

namespace staticlm {
namespace {

bool in_range(const Graph& graph, ValueId value) {
  return value >= 0 && static_cast<size_t>(value) < graph.num_values();
}

// A value (or alias chain) that needs arena bytes.
struct ArenaItem {
  ValueId value;
  uint64_t size;
  int32_t first_step;
  int32_t last_step;
};

bool lifetimes_overlap(const PlannedValue& a, const ArenaItem& b) {
  return a.first_step <= b.last_step && b.first_step <= a.last_step;
}

Result<uint64_t> value_bytes(const Graph& graph, ValueId id) {
  const GraphValue& value = graph.value(id);
  auto bytes = tensor_bytes(value.dtype, value.shape);
  if (bytes.ok()) {
    return bytes;
  }
  const std::string context = str_cat("value ", id, " (", dtype_name(value.dtype), shape_string(value.shape), ")");
  if (bytes.status().code() == StatusCode::kOutOfRange) {
    return resource_exhausted(context, ": byte size overflows 64 bits");
  }
  return bytes.status().with_context(context);
}

class MemoryPlanner {
 public:
  MemoryPlanner(const Graph& graph, std::span<const ScheduleStep> steps, uint32_t alignment)
      : graph_(graph), steps_(steps) {
    plan_.alignment = alignment;
    plan_.values.resize(graph.num_values());
  }

  Result<MemoryPlan> run() {
    if (!is_power_of_two(plan_.alignment)) {
      return invalid_argument("memory plan: alignment ", plan_.alignment, " is not a power of two");
    }
    STATICLM_RETURN_IF_ERROR(check_nodes());
    root_ = alias_roots(graph_);
    STATICLM_RETURN_IF_ERROR(compute_lifetimes());
    STATICLM_RETURN_IF_ERROR(resolve_chains());
    find_views();
    STATICLM_ASSIGN_OR_RETURN(std::vector<ArenaItem> items, arena_items());
    STATICLM_RETURN_IF_ERROR(assign_offsets(std::move(items)));
    for (size_t v = 0; v < plan_.values.size(); ++v) {
      if (plan_.values[v].view_of != kNoValue) {
        plan_.values[v].in_arena = true;
        plan_.values[v].offset = planned(plan_.values[v].view_of).offset;
      }
    }
    return std::move(plan_);
  }

 private:
  PlannedValue& planned(ValueId id) { return plan_.values[static_cast<size_t>(id)]; }

  // Every reference in range and every in-place op well formed, so alias_roots can follow them.
  Status check_nodes() {
    for (size_t v = 0; v < graph_.num_values(); ++v) {
      STATICLM_ASSIGN_OR_RETURN(planned(static_cast<ValueId>(v)).size, value_bytes(graph_, static_cast<ValueId>(v)));
    }
    const auto nodes = graph_.nodes();
    for (size_t i = 0; i < nodes.size(); ++i) {
      const GraphNode& node = nodes[i];
      for (ValueId input : node.inputs) {
        if (input != kNoValue && !in_range(graph_, input)) {
          return invalid_argument(describe_node(i, node.op, node.name), ": input value ", input, " does not exist");
        }
      }
      for (ValueId output : node.outputs) {
        if (!in_range(graph_, output)) {
          return invalid_argument(describe_node(i, node.op, node.name), ": output value ", output, " does not exist");
        }
      }
      for (const InPlaceUpdate& update : in_place_updates(node.op, node.attributes)) {
        if (update.input >= node.inputs.size() || node.inputs[update.input] == kNoValue ||
            update.output >= node.outputs.size()) {
          return invalid_argument(describe_node(i, node.op, node.name), ": an in-place op needs its input ",
                                  update.input, " and its output ", update.output);
        }
      }
    }
    for (const GraphOutput& output : graph_.outputs()) {
      if (!in_range(graph_, output.value)) {
        return invalid_argument("graph output '", output.name, "': value ", output.value, " does not exist");
      }
    }
    return ok_status();
  }

  void touch_read(ValueId value, int32_t step) {
    if (value == kNoValue) {
      return;
    }
    PlannedValue& p = planned(value);
    if (graph_.value(value).kind != ValueKind::kNodeOutput) {
      p.last_step = std::max(p.last_step, step);
      return;
    }
    touch_write(value, step);
  }

  void touch_write(ValueId value, int32_t step) {
    PlannedValue& p = planned(value);
    p.first_step = p.first_step < 0 ? step : std::min(p.first_step, step);
    p.last_step = std::max(p.last_step, step);
    touched_[static_cast<size_t>(value)] = true;
  }

  Status compute_lifetimes() {
    touched_.assign(graph_.num_values(), false);
    const auto nodes = graph_.nodes();
    for (size_t s = 0; s < steps_.size(); ++s) {
      const ScheduleStep& step = steps_[s];
      const auto index = static_cast<int32_t>(s);
      if (step.node >= 0) {
        if (static_cast<size_t>(step.node) >= nodes.size()) {
          return invalid_argument("memory plan: step ", s, " runs node ", step.node, ", which does not exist");
        }
        const GraphNode& node = nodes[static_cast<size_t>(step.node)];
        for (ValueId input : node.inputs) touch_read(input, index);
        for (ValueId output : node.outputs) touch_write(output, index);
        continue;
      }
      for (const auto* values : {&step.inputs, &step.outputs}) {
        for (ValueId value : *values) {
          if (!in_range(graph_, value)) {
            return invalid_argument("memory plan: step ", s, " touches value ", value, ", which does not exist");
          }
        }
      }
      for (ValueId input : step.inputs) touch_read(input, index);
      for (ValueId output : step.outputs) touch_write(output, index);
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      const GraphNode& node = nodes[i];
      for (const InPlaceUpdate& update : in_place_updates(node.op, node.attributes)) {
        const ValueId output = node.outputs[update.output];
        const ValueId root = root_[static_cast<size_t>(output)];
        planned(output).alias_root = root;
        if (graph_.value(root).kind == ValueKind::kConstant) {
          return invalid_argument(describe_node(i, node.op, node.name), ": updates constant '",
                                  graph_.constants().at(graph_.value(root).constant).name,
                                  "' in place; constants are read-only");
        }
      }
    }
    const auto last_index = static_cast<int32_t>(steps_.size()) - 1;
    for (const GraphOutput& output : graph_.outputs()) {
      planned(output.value).last_step = last_index;
    }
    return ok_status();
  }

  // Finds the chains that live in caller memory: rooted at a graph input, or holding a graph
  // output (whose buffer the caller provides, so the whole chain is written there).
  Status resolve_chains() {
    caller_owned_.assign(graph_.num_values(), false);
    std::vector<const GraphOutput*> chain_output(graph_.num_values(), nullptr);
    for (const GraphOutput& output : graph_.outputs()) {
      const auto root = static_cast<size_t>(root_[static_cast<size_t>(output.value)]);
      if (chain_output[root] != nullptr) {
        return invalid_argument("graph outputs '", chain_output[root]->name, "' and '", output.name,
                                "' share storage (one in-place chain)");
      }
      chain_output[root] = &output;
      caller_owned_[root] = true;
    }
    for (size_t v = 0; v < graph_.num_values(); ++v) {
      const auto root = static_cast<size_t>(root_[v]);
      if (root == v || !touched_[v]) {
        continue;
      }
      // The root keeps its bytes from the first to the last touch of any value of its chain.
      PlannedValue& root_plan = plan_.values[root];
      const PlannedValue& member = plan_.values[v];
      if (graph_.value(static_cast<ValueId>(root)).kind == ValueKind::kNodeOutput) {
        root_plan.first_step =
            root_plan.first_step < 0 ? member.first_step : std::min(root_plan.first_step, member.first_step);
        touched_[root] = true;
      }
      root_plan.last_step = std::max(root_plan.last_step, member.last_step);
    }
    return ok_status();
  }

  // A reshape's output takes its input's bytes where the reshape is the last step to touch the
  // input: the bytes are the same, so the kernel's copy is skipped (one pass over the attention
  // output per layer of a prefill, read from the other core's cache). Only plain arena values:
  // neither one in an in-place chain (whose storage follows its root) nor a graph output (whose
  // storage is the caller's). The input's bytes then live as long as the output's; a reshape of
  // a view shares the first value's bytes.
  void find_views() {
    std::vector<int> chain_members(graph_.num_values(), 0);
    for (size_t v = 0; v < graph_.num_values(); ++v) {
      ++chain_members[static_cast<size_t>(root_[v])];
    }
    auto plain_arena_value = [&](ValueId value) {
      const auto v = static_cast<size_t>(value);
      return graph_.value(value).kind == ValueKind::kNodeOutput && touched_[v] && root_[v] == value &&
             chain_members[v] == 1 && !caller_owned_[v];
    };
    const auto nodes = graph_.nodes();
    for (size_t s = 0; s < steps_.size(); ++s) {
      if (steps_[s].node < 0) {
        continue;
      }
      const GraphNode& node = nodes[static_cast<size_t>(steps_[s].node)];
      if (node.op != OpKind::kReshape || node.inputs.size() != 1 || node.outputs.size() != 1) {
        continue;
      }
      const ValueId input = node.inputs[0];
      const ValueId output = node.outputs[0];
      if (input == kNoValue || input == output || !plain_arena_value(input) || !plain_arena_value(output) ||
          planned(input).last_step != static_cast<int32_t>(s) || planned(input).size != planned(output).size) {
        continue;
      }
      const ValueId base = planned(input).view_of != kNoValue ? planned(input).view_of : input;
      planned(output).view_of = base;
      planned(base).last_step = std::max(planned(base).last_step, planned(output).last_step);
    }
  }

  Result<std::vector<ArenaItem>> arena_items() const {
    std::vector<ArenaItem> items;
    for (size_t v = 0; v < graph_.num_values(); ++v) {
      const GraphValue& value = graph_.value(static_cast<ValueId>(v));
      if (value.kind != ValueKind::kNodeOutput || !touched_[v] || root_[v] != static_cast<ValueId>(v) ||
          caller_owned_[v] || plan_.values[v].view_of != kNoValue) {
        continue;
      }
      const PlannedValue& planned_value = plan_.values[v];
      items.push_back({static_cast<ValueId>(v), planned_value.size, planned_value.first_step, planned_value.last_step});
    }
    // Big values first: they are the hardest to fit into gaps left by others.
    std::sort(items.begin(), items.end(), [](const ArenaItem& a, const ArenaItem& b) {
      if (a.size != b.size) {
        return a.size > b.size;
      }
      if (a.first_step != b.first_step) {
        return a.first_step < b.first_step;
      }
      return a.value < b.value;
    });
    return items;
  }

  // Best fit: each value goes into the smallest gap, among values live at the same time, that
  // holds it, or after all of them.
  Status assign_offsets(std::vector<ArenaItem> items) {
    struct Busy {
      uint64_t offset;
      uint64_t end;
    };
    std::vector<ValueId> placed;
    uint64_t arena_end = 0;
    for (const ArenaItem& item : items) {
      std::vector<Busy> busy;
      for (ValueId other : placed) {
        const PlannedValue& other_plan = planned(other);
        if (other_plan.size != 0 && lifetimes_overlap(other_plan, item)) {
          busy.push_back({other_plan.offset, other_plan.offset + other_plan.size});
        }
      }
      std::sort(busy.begin(), busy.end(), [](const Busy& a, const Busy& b) { return a.offset < b.offset; });

      std::optional<uint64_t> best_offset;
      uint64_t best_gap = std::numeric_limits<uint64_t>::max();
      uint64_t cursor = 0;
      for (const Busy& block : busy) {
        auto candidate = checked_align_up(cursor, plan_.alignment);
        if (candidate && *candidate <= block.offset && block.offset - *candidate >= item.size &&
            block.offset - cursor < best_gap) {
          best_gap = block.offset - cursor;
          best_offset = *candidate;
        }
        cursor = std::max(cursor, block.end);
      }
      if (!best_offset) {
        best_offset = checked_align_up(cursor, plan_.alignment);
      }
      std::optional<uint64_t> end = best_offset ? checked_add(*best_offset, item.size) : std::nullopt;
      if (!end) {
        return resource_exhausted("memory plan: the arena overflows 64 bits placing value ", item.value, " (",
                                  item.size, " bytes)");
      }
      PlannedValue& value = planned(item.value);
      value.in_arena = true;
      value.offset = *best_offset;
      arena_end = std::max(arena_end, *end);
      placed.push_back(item.value);
    }
    auto arena_size = checked_align_up(arena_end, plan_.alignment);
    if (!arena_size) {
      return resource_exhausted("memory plan: the arena size ", arena_end, " overflows 64 bits when aligned");
    }
    plan_.arena_size = *arena_size;
    return ok_status();
  }

  const Graph& graph_;
  std::span<const ScheduleStep> steps_;
  MemoryPlan plan_;
  std::vector<ValueId> root_;       // the alias chain root of each value (itself when not aliased)
  std::vector<bool> touched_;       // a node output some step touches (directly or through its chain)
  std::vector<bool> caller_owned_;  // a chain root whose storage is a graph output buffer
};

}  // namespace

std::vector<ScheduleStep> one_step_per_node(const Graph& graph) {
  std::vector<ScheduleStep> steps(graph.nodes().size());
  for (size_t n = 0; n < steps.size(); ++n) {
    steps[n].node = static_cast<int32_t>(n);
  }
  return steps;
}

Result<MemoryPlan> plan_memory(const Graph& graph, std::span<const ScheduleStep> steps, uint32_t alignment) {
  return MemoryPlanner(graph, steps, alignment).run();
}

Result<MemoryPlan> plan_memory(const Graph& graph, uint32_t alignment) {
  const std::vector<ScheduleStep> steps = one_step_per_node(graph);
  return plan_memory(graph, steps, alignment);
}

}  // namespace staticlm
