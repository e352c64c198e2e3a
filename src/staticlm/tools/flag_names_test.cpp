// SPDX-License-Identifier: Apache-2.0
// with_flag_names: a library message gets the CLI flag after each whole parameter name it quotes,
// once, whatever the flag's own text contains.
#include "staticlm/tools/flag_names.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace staticlm::cli {
namespace {

using Flags = std::vector<std::pair<std::string_view, std::string_view>>;

std::string annotated(std::string_view message, const Flags& flags) {
  return with_flag_names(Status(StatusCode::kInvalidArgument, std::string(message)), flags).message();
}

TEST(WithFlagNamesTest, AddsTheFlagAfterAQuotedName) {
  EXPECT_EQ(annotated("option 'prefill_len': expected >= 1, found 0", {{"prefill_len", "--prefill-len"}}),
            "option 'prefill_len' (--prefill-len): expected >= 1, found 0");
}

TEST(WithFlagNamesTest, AFlagThatContainsItsNameIsInsertedOnce) {
  // The flag "--stride" holds the name "stride": annotating its own note used to loop forever.
  EXPECT_EQ(annotated("the step 'stride' must be in [1, 64], found 1000", {{"stride", "--stride"}}),
            "the step 'stride' (--stride) must be in [1, 64], found 1000");
  EXPECT_EQ(annotated("stride and stride", {{"stride", "--stride"}}), "stride (--stride) and stride (--stride)");
}

TEST(WithFlagNamesTest, WholeNamesOnly) {
  const Flags flags = {{"max_new_tokens", "-n"}, {"stride", "--stride"}};
  EXPECT_EQ(annotated("max_new_tokens_limit and strides and --stride", flags),
            "max_new_tokens_limit and strides and --stride");
  EXPECT_EQ(annotated("max_new_tokens", flags), "max_new_tokens (-n)");
}

TEST(WithFlagNamesTest, NamesInsidePathsAreNotParameters) {
  const Flags flags = {{"no_tokenizer", "--no-tokenizer"}, {"stride", "--stride"}};
  EXPECT_EQ(annotated("'/tmp/no_tokenizer' has no tokenizer (option 'no_tokenizer')", flags),
            "'/tmp/no_tokenizer' has no tokenizer (option 'no_tokenizer' (--no-tokenizer))");
  EXPECT_EQ(annotated("stride/model.slm and runs.stride and stride.json", flags),
            "stride/model.slm and runs.stride and stride.json");
  EXPECT_EQ(annotated("lower the stride.", flags), "lower the stride (--stride).");
}

TEST(WithFlagNamesTest, AMessageAlreadyAnnotatedIsLeftAlone) {
  const std::string once = annotated("option 'num_threads': expected >= 0", {{"num_threads", "--threads"}});
  EXPECT_EQ(annotated(once, {{"num_threads", "--threads"}}), once);
}

TEST(WithFlagNamesTest, EveryParameterInOnePass) {
  // The note of one parameter ("--ctx") must not be searched for another's name.
  const Flags flags = {{"ctx", "--ctx"}, {"stride", "--stride"}, {"ctx_stride", "--ctx-stride"}};
  EXPECT_EQ(annotated("'ctx' is 64 and 'stride' 128", flags), "'ctx' (--ctx) is 64 and 'stride' (--stride) 128");
}

TEST(WithFlagNamesTest, KeepsTheCode) {
  const Status status =
      with_flag_names(Status(StatusCode::kOutOfRange, "max_new_tokens"), Flags{{"max_new_tokens", "-n"}});
  EXPECT_EQ(status.code(), StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace staticlm::cli
