// Arena planning over a lowered instruction list. The graph planner (graph/memory_planner.h)
// plans by node order; once partitions run as single delegate calls the order is the schedule's,
// and a delegate may touch any of its inputs and outputs at any time during its call. So a
// partitioned method is planned over its steps: a buffer lives from the first step that touches
// it to the last, inclusive, and two buffers share bytes only if those ranges are disjoint.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "staticlm/core/result.h"

namespace staticlm {

struct StepBuffer {
  uint64_t size = 0;
  int32_t first_step = 0;
  int32_t last_step = 0;  // >= first_step
};

struct StepMemoryPlan {
  uint64_t arena_size = 0;
  std::vector<uint64_t> offsets;  // per buffer, each a multiple of the alignment
};

// Places the largest buffers first, each at the lowest aligned offset that overlaps no placed
// buffer live at the same time. Fails with InvalidArgument for an alignment that is not a power
// of two or a buffer whose last step precedes its first, ResourceExhausted when the arena size
// overflows 64 bits.
Result<StepMemoryPlan> plan_step_memory(std::span<const StepBuffer> buffers, uint32_t alignment);

}  // namespace staticlm
