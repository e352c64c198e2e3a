// Lifetime-based memory planning for a verified graph. Node outputs that are not graph outputs
// get an offset in one arena; two values share bytes only if their lifetimes (from the node
// that defines them to the last node that reads them) do not overlap. A value produced by an
// in-place op shares its input's storage; the whole alias chain is live until its last reader.
// A chain rooted at a graph input lives in the caller's input buffer, and a chain whose last
// value is a graph output lives in the caller's output buffer; neither takes arena bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/graph/graph.h"

namespace staticlm {

struct PlannedValue {
  bool in_arena = false;
  uint64_t offset = 0;  // valid when in_arena
  uint64_t size = 0;    // bytes
  // First and last node index (inclusive) during which the bytes must stay intact.
  // Node outputs: [producer, last reader], or [producer, producer] for a value nobody reads;
  // an arena value that roots an in-place chain spans the uses of the whole chain; a graph
  // output lasts to the last node. Inputs and constants: first_node -1 (they exist before the
  // run), last_node their last reader or -1.
  int32_t first_node = -1;
  int32_t last_node = -1;
  // For an in-place op's output: the root of its alias chain (the value that owns the storage:
  // a graph input, an arena value or a graph output's root). kNoValue for every other value.
  ValueId alias_root = kNoValue;
};

struct MemoryPlan {
  uint64_t arena_size = 0;
  uint32_t alignment = 64;
  std::vector<PlannedValue> values;  // indexed by ValueId
};

// Fails with InvalidArgument when the graph is not plannable (alignment not a power of two, a
// reference out of range, a constant updated in place, two graph outputs in one alias chain)
// and ResourceExhausted when a value's or the arena's byte size overflows 64 bits.
Result<MemoryPlan> plan_memory(const Graph& graph, uint32_t alignment = 64);

}  // namespace staticlm
