// SPDX-License-Identifier: Apache-2.0
// Lifetime-based memory planning over a method's schedule: the one planner, for plain methods
// (one step per node) and partitioned ones (a delegate call is one step) alike.
//
// A step is a kernel call of one node, or a delegate call that may read its inputs and write its
// outputs at any time during the call. Node outputs that need bytes of their own get an offset in
// one arena; two of them share bytes only if their lifetimes (from the first step that touches
// them to the last, inclusive) do not overlap. A value produced by an in-place op shares its
// input's storage: the whole alias chain (graph/alias_roots.h) lives until the last step that
// touches any member. A chain rooted at a graph input lives in the caller's input buffer, and a
// chain holding a graph output lives in the caller's output buffer; neither takes arena bytes.
// A node output no step touches (one only a delegate uses internally) takes no bytes either: the
// delegate owns it. A reshape that is the last step to touch its input writes its output into
// the input's bytes (view_of), so its copy is a no-op.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/graph/graph.h"

namespace staticlm {

// One step of a schedule. node >= 0: the kernel call of that node (it touches the node's inputs
// and outputs). node < 0: a delegate call touching `inputs` and `outputs`.
struct ScheduleStep {
  int32_t node = -1;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
};

// Every node as its own step, in node order: the schedule of a method nothing delegates.
std::vector<ScheduleStep> one_step_per_node(const Graph& graph);

struct PlannedValue {
  bool in_arena = false;
  uint64_t offset = 0;  // valid when in_arena
  uint64_t size = 0;    // bytes
  // First and last step (inclusive) during which the bytes must stay intact. Node outputs:
  // [first touch, last touch]; a chain root spans the touches of its whole chain, a value with
  // views those of its views; a graph output lasts to the last step. Inputs and constants:
  // first_step -1 (they exist before the run), last_step their last reader or -1. A value no
  // step touches: [-1, -1].
  int32_t first_step = -1;
  int32_t last_step = -1;
  // For an in-place op's output: the root of its alias chain (the value that owns the storage).
  // kNoValue for every other value.
  ValueId alias_root = kNoValue;
  // For a reshape's output planned in its input's bytes (the value whose bytes it shares, which
  // stays live as long as it does): kNoValue for every other value.
  ValueId view_of = kNoValue;
};

struct MemoryPlan {
  uint64_t arena_size = 0;
  uint32_t alignment = 64;
  std::vector<PlannedValue> values;  // indexed by ValueId
};

// Fails with InvalidArgument when the graph or schedule is not plannable (alignment not a power
// of two, a reference out of range, a constant updated in place, two graph outputs in one alias
// chain) and ResourceExhausted when a value's or the arena's byte size overflows 64 bits.
Result<MemoryPlan> plan_memory(const Graph& graph, std::span<const ScheduleStep> steps, uint32_t alignment = 64);
// plan_memory over one_step_per_node(graph).
Result<MemoryPlan> plan_memory(const Graph& graph, uint32_t alignment = 64);

}  // namespace staticlm
