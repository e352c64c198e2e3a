// SPDX-License-Identifier: Apache-2.0
#include "staticlm/options/did_you_mean.h"

#include <gtest/gtest.h>

namespace staticlm {
namespace {

TEST(DidYouMeanTest, EditDistanceCountsSwapsAsOneEdit) {
  EXPECT_EQ(edit_distance("use_fp16", "use_fp16"), 0u);
  EXPECT_EQ(edit_distance("use_fp61", "use_fp16"), 1u);
  EXPECT_EQ(edit_distance("soc_mode", "soc_model"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
}

TEST(DidYouMeanTest, SuggestsCloseNamesAndNamesContainingTheInput) {
  const std::vector<std::string> known = {"use_fp16", "use_dlbc", "soc_model", "htp_performance_mode"};
  EXPECT_EQ(closest_names("use_fp61", known), (std::vector<std::string>{"use_fp16"}));
  EXPECT_EQ(closest_names("performance_mode", known), (std::vector<std::string>{"htp_performance_mode"}));
  EXPECT_TRUE(closest_names("zzzzzz", known).empty());
  EXPECT_EQ(did_you_mean("SOC_MODEL", known), " (did you mean 'soc_model'?)");
  EXPECT_EQ(did_you_mean("nothing_like_it", known), "");
}

TEST(DidYouMeanTest, ListsEverySuggestionWithinReach) {
  const std::vector<std::string> known = {"fps", "fp16", "fp32"};
  EXPECT_EQ(did_you_mean("fp3", known), " (did you mean 'fps' or 'fp32'?)");
}

}  // namespace
}  // namespace staticlm
