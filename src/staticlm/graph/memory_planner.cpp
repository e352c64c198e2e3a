#include "staticlm/graph/memory_planner.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "staticlm/core/checked_math.h"

namespace staticlm {
namespace {

bool in_range(const Graph& graph, ValueId value) {
  return value >= 0 && static_cast<size_t>(value) < graph.num_values();
}

// A value (or alias chain) that needs arena bytes.
struct ArenaItem {
  ValueId value;
  uint64_t size;
  int32_t first_node;
  int32_t last_node;
};

bool lifetimes_overlap(const PlannedValue& a, const ArenaItem& b) {
  return a.first_node <= b.last_node && b.first_node <= a.last_node;
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
  MemoryPlanner(const Graph& graph, uint32_t alignment) : graph_(graph) {
    plan_.alignment = alignment;
    plan_.values.resize(graph.num_values());
    root_.resize(graph.num_values());
    for (size_t v = 0; v < root_.size(); ++v) {
      root_[v] = static_cast<ValueId>(v);
    }
  }

  Result<MemoryPlan> run() {
    if (!is_power_of_two(plan_.alignment)) {
      return invalid_argument("memory plan: alignment ", plan_.alignment, " is not a power of two");
    }
    STATICLM_RETURN_IF_ERROR(compute_lifetimes());
    STATICLM_RETURN_IF_ERROR(resolve_chains());
    STATICLM_ASSIGN_OR_RETURN(std::vector<ArenaItem> items, arena_items());
    STATICLM_RETURN_IF_ERROR(assign_offsets(std::move(items)));
    return std::move(plan_);
  }

 private:
  PlannedValue& planned(ValueId id) { return plan_.values[static_cast<size_t>(id)]; }

  Status compute_lifetimes() {
    for (size_t v = 0; v < graph_.num_values(); ++v) {
      STATICLM_ASSIGN_OR_RETURN(planned(static_cast<ValueId>(v)).size, value_bytes(graph_, static_cast<ValueId>(v)));
    }
    produced_.assign(graph_.num_values(), false);
    const auto nodes = graph_.nodes();
    for (size_t i = 0; i < nodes.size(); ++i) {
      const auto index = static_cast<int32_t>(i);
      const GraphNode& node = nodes[i];
      for (ValueId input : node.inputs) {
        if (input == kNoValue) {
          continue;
        }
        if (!in_range(graph_, input)) {
          return invalid_argument(describe_node(i, node.op, node.name), ": input value ", input, " does not exist");
        }
        planned(input).last_node = index;
      }
      for (ValueId output : node.outputs) {
        if (!in_range(graph_, output)) {
          return invalid_argument(describe_node(i, node.op, node.name), ": output value ", output, " does not exist");
        }
        produced_[static_cast<size_t>(output)] = true;
        planned(output).first_node = index;
      }
      const int aliased = in_place_input(node.op, node.attributes);
      if (aliased >= 0) {
        if (static_cast<size_t>(aliased) >= node.inputs.size() ||
            node.inputs[static_cast<size_t>(aliased)] == kNoValue || node.outputs.size() != 1) {
          return invalid_argument(describe_node(i, node.op, node.name), ": an in-place op needs its input ", aliased,
                                  " and exactly one output");
        }
        const ValueId root = root_[static_cast<size_t>(node.inputs[static_cast<size_t>(aliased)])];
        root_[static_cast<size_t>(node.outputs[0])] = root;
        planned(node.outputs[0]).alias_root = root;
        if (graph_.value(root).kind == ValueKind::kConstant) {
          return invalid_argument(describe_node(i, node.op, node.name), ": updates constant '",
                                  graph_.constants().at(graph_.value(root).constant).name,
                                  "' in place; constants are read-only");
        }
      }
    }
    const auto last_index = static_cast<int32_t>(nodes.size()) - 1;
    for (size_t v = 0; v < graph_.num_values(); ++v) {
      PlannedValue& value = plan_.values[v];
      if (produced_[v]) {
        value.last_node = std::max(value.last_node, value.first_node);
      } else {
        value.first_node = -1;
      }
    }
    for (const GraphOutput& output : graph_.outputs()) {
      if (!in_range(graph_, output.value)) {
        return invalid_argument("graph output '", output.name, "': value ", output.value, " does not exist");
      }
      planned(output.value).last_node = last_index;
    }
    return ok_status();
  }

  // Finds the chains that live in caller memory: rooted at a graph input, or ending in a graph
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
      if (root == v) {
        continue;
      }
      // The root keeps its bytes until the last use of any value of its chain.
      PlannedValue& root_plan = plan_.values[root];
      root_plan.last_node = std::max(root_plan.last_node, plan_.values[v].last_node);
    }
    return ok_status();
  }

  Result<std::vector<ArenaItem>> arena_items() const {
    std::vector<ArenaItem> items;
    for (size_t v = 0; v < graph_.num_values(); ++v) {
      const GraphValue& value = graph_.value(static_cast<ValueId>(v));
      if (value.kind != ValueKind::kNodeOutput || !produced_[v] || root_[v] != static_cast<ValueId>(v) ||
          caller_owned_[v]) {
        continue;
      }
      const PlannedValue& planned_value = plan_.values[v];
      items.push_back({static_cast<ValueId>(v), planned_value.size, planned_value.first_node, planned_value.last_node});
    }
    // Big values first: they are the hardest to fit into gaps left by others.
    std::sort(items.begin(), items.end(), [](const ArenaItem& a, const ArenaItem& b) {
      if (a.size != b.size) {
        return a.size > b.size;
      }
      if (a.first_node != b.first_node) {
        return a.first_node < b.first_node;
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
  MemoryPlan plan_;
  std::vector<ValueId> root_;       // the alias chain root of each value (itself when not aliased)
  std::vector<bool> produced_;      // defined by some node
  std::vector<bool> caller_owned_;  // a chain root whose storage is a graph output buffer
};

}  // namespace

Result<MemoryPlan> plan_memory(const Graph& graph, uint32_t alignment) {
  return MemoryPlanner(graph, alignment).run();
}

}  // namespace staticlm
