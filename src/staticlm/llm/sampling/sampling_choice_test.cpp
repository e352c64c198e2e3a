// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/sampling/sampling_choice.h"

#include <gtest/gtest.h>

namespace staticlm {
namespace {

SamplingParams program_defaults() {
  SamplingParams params;
  params.temperature = 0.6;
  params.top_k = 50;
  params.top_p = 0.9;
  params.repetition_penalty = 1.1;
  return params;
}

TEST(SamplingChoiceTest, EachGivenFieldOverridesItsDefaultAndNoOther) {
  SamplingOverrides given;
  given.temperature = 0.8;
  given.seed = 7;
  auto params = resolve_sampling(program_defaults(), given);
  ASSERT_TRUE(params.ok()) << params.status().to_string();
  EXPECT_EQ(params->temperature, 0.8);
  EXPECT_EQ(params->top_k, 50);
  EXPECT_EQ(params->top_p, 0.9);
  EXPECT_EQ(params->repetition_penalty, 1.1);
  EXPECT_EQ(params->seed, 7u);

  given.temperature = 0.0;  // greedy, whatever the program recommends
  EXPECT_EQ(resolve_sampling(program_defaults(), given)->temperature, 0.0);
}

TEST(SamplingChoiceTest, WithoutASeedEachChoiceDrawsAFreshOne) {
  // Two 63-bit draws from random_device agree with probability 2^-63.
  EXPECT_NE(resolve_sampling(program_defaults(), {})->seed, resolve_sampling(program_defaults(), {})->seed);
}

TEST(SamplingChoiceTest, SaysWhetherABadValueIsTheCallersOrTheProgramsOwn) {
  SamplingOverrides given;
  given.top_p = 1.5;
  auto refused = resolve_sampling(program_defaults(), given);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message().find("generation_config"), std::string::npos) << refused.status().message();
  EXPECT_NE(refused.status().message().find("'top_p' must be in (0, 1], found 1.5"), std::string::npos);

  SamplingParams broken = program_defaults();
  broken.top_p = 0.0;
  auto from_program = resolve_sampling(broken, {});
  ASSERT_FALSE(from_program.ok());
  EXPECT_EQ(from_program.status().message(),
            "the program's generation_config: sampling option 'top_p' must be in (0, 1], found 0");
  given.top_p = 0.5;  // overriding the bad value is enough
  EXPECT_TRUE(resolve_sampling(broken, given).ok());
}

TEST(SamplingChoiceTest, DescribesOnlyWhatIsOn) {
  EXPECT_EQ(describe_sampling(SamplingParams()), "greedy");
  EXPECT_EQ(describe_sampling(program_defaults()), "temp 0.6, top-k 50, top-p 0.9, repeat-penalty 1.1");
  SamplingParams greedy = program_defaults();
  greedy.temperature = 0.0;
  EXPECT_EQ(describe_sampling(greedy), "greedy, repeat-penalty 1.1") << "the filters do not apply to greedy";
}

}  // namespace
}  // namespace staticlm
