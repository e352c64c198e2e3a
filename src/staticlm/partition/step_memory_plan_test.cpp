#include "staticlm/partition/step_memory_plan.h"

#include <random>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

TEST(StepMemoryPlanTest, BuffersLiveAtTheSameTimeNeverOverlap) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<StepBuffer> buffers(1 + rng() % 20);
    for (StepBuffer& buffer : buffers) {
      buffer.size = rng() % 300;
      buffer.first_step = static_cast<int32_t>(rng() % 10);
      buffer.last_step = buffer.first_step + static_cast<int32_t>(rng() % 5);
    }
    auto plan = plan_step_memory(buffers, 64);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    EXPECT_EQ(plan->arena_size % 64, 0u);
    for (size_t i = 0; i < buffers.size(); ++i) {
      EXPECT_EQ(plan->offsets[i] % 64, 0u);
      EXPECT_LE(plan->offsets[i] + buffers[i].size, plan->arena_size);
      for (size_t j = i + 1; j < buffers.size(); ++j) {
        const bool same_time =
            buffers[i].first_step <= buffers[j].last_step && buffers[j].first_step <= buffers[i].last_step;
        const bool same_bytes = plan->offsets[i] < plan->offsets[j] + buffers[j].size &&
                                plan->offsets[j] < plan->offsets[i] + buffers[i].size;
        EXPECT_FALSE(same_time && same_bytes) << "trial " << trial << ": buffers " << i << " and " << j;
      }
    }
  }
}

TEST(StepMemoryPlanTest, BuffersAtDifferentTimesShareBytes) {
  const std::vector<StepBuffer> buffers = {{1000, 0, 1}, {1000, 2, 3}, {500, 1, 2}};
  auto plan = plan_step_memory(buffers, 64);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->offsets[0], plan->offsets[1]);
  EXPECT_EQ(plan->arena_size, 1024u + 512u);
}

TEST(StepMemoryPlanTest, RefusesBadInput) {
  const std::vector<StepBuffer> backwards = {{8, 3, 1}};
  EXPECT_NE(plan_step_memory(backwards, 64).status().message().find("buffer 0 ends (step 1) before it starts (step 3)"),
            std::string::npos);
  EXPECT_NE(plan_step_memory({}, 48).status().message().find("alignment 48 is not a power of two"), std::string::npos);
  const std::vector<StepBuffer> huge = {{UINT64_MAX - 10, 0, 0}, {100, 0, 0}};
  EXPECT_EQ(plan_step_memory(huge, 64).status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace staticlm
