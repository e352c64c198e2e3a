#include "staticlm/partition/step_memory_plan.h"

#include <algorithm>
#include <numeric>

#include "staticlm/core/checked_math.h"

namespace staticlm {

Result<StepMemoryPlan> plan_step_memory(std::span<const StepBuffer> buffers, uint32_t alignment) {
  if (!is_power_of_two(alignment)) {
    return invalid_argument("memory plan: alignment ", alignment, " is not a power of two");
  }
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), size_t{0});
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].last_step < buffers[i].first_step) {
      return invalid_argument("memory plan: buffer ", i, " ends (step ", buffers[i].last_step,
                              ") before it starts (step ", buffers[i].first_step, ")");
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return buffers[a].size > buffers[b].size; });

  StepMemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> placed;
  for (size_t index : order) {
    const StepBuffer& buffer = buffers[index];
    // Placed buffers live at the same time, by offset; slide past each one that collides.
    std::vector<size_t> live;
    for (size_t other : placed) {
      if (buffers[other].first_step <= buffer.last_step && buffer.first_step <= buffers[other].last_step) {
        live.push_back(other);
      }
    }
    std::sort(live.begin(), live.end(), [&](size_t a, size_t b) { return plan.offsets[a] < plan.offsets[b]; });
    uint64_t offset = 0;
    for (size_t other : live) {
      auto end = checked_add(offset, buffer.size);
      if (!end) {
        return resource_exhausted("memory plan: arena size overflows 64 bits");
      }
      if (*end <= plan.offsets[other] || buffer.size == 0) {
        break;
      }
      auto next = checked_add(plan.offsets[other], buffers[other].size);
      auto aligned = next ? checked_align_up(*next, alignment) : std::nullopt;
      if (!aligned) {
        return resource_exhausted("memory plan: arena size overflows 64 bits");
      }
      offset = std::max(offset, *aligned);
    }
    auto end = checked_add(offset, buffer.size);
    if (!end) {
      return resource_exhausted("memory plan: arena size overflows 64 bits");
    }
    plan.offsets[index] = offset;
    plan.arena_size = std::max(plan.arena_size, *end);
    placed.push_back(index);
  }
  auto total = checked_align_up(plan.arena_size, alignment);
  if (!total) {
    return resource_exhausted("memory plan: arena size overflows 64 bits");
  }
  plan.arena_size = *total;
  return plan;
}

}  // namespace staticlm
