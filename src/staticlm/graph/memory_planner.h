// Lifetime-based memory planning for a verified graph. Node outputs that are not graph outputs
// get an offset in one arena; two values share bytes only if their lifetimes (from the node
// that defines them to the last node that reads them) do not overlap. A value produced by an
// in-place op shares its input's storage; the whole alias chain is live until its last reader.
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
  int32_t first_node = -1;
  int32_t last_node = -1;
};

struct MemoryPlan {
  uint64_t arena_size = 0;
  uint32_t alignment = 64;
  std::vector<PlannedValue> values;  // indexed by ValueId
};

// Fails with InvalidArgument when the graph is not plannable (e.g. a graph output aliases an
// input or constant) and ResourceExhausted on size overflow.
Result<MemoryPlan> plan_memory(const Graph& graph, uint32_t alignment = 64);

}  // namespace staticlm
