// SPDX-License-Identifier: Apache-2.0
// Granite 3 beyond the logits every family is held to (hf_export_test, delegated_export_test): a
// power-of-two logits_scaling is folded into the final norm (no op, no constant) and any other one
// divides the logits as an op; multipliers of 1 add nothing; attention_multiplier is the program's
// attention scale; half precision stays within the bound; each refusal names the field.
#include <algorithm>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "staticlm/contracts/hf_static_v1_spec.h"
#include "staticlm/format/metadata.h"

#include "family_export_helpers.h"
#include "fixture_reference.h"

namespace staticlm {
namespace {

using nlohmann::json;
using testing::exported_logits;
using testing::small_options;

namespace key = hf_static_v1::key;

std::vector<std::string> constant_names(const ProgramFile& file) {
  std::vector<std::string> names;
  for (const fb::Constant* constant : *file.program().constants()) {
    names.push_back(constant->name()->str());
  }
  return names;
}

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// logits_scaling 6 is no power of two: the logits are multiplied by 1/6 as an op, and times 6 they
// are the reference's (logits_scaling 8) times 8.
TEST(GraniteExportTest, ALogitsScalingThatIsNoPowerOfTwoIsAnOp) {
  const testing::FixtureReference ref = testing::load_fixture_reference("granite");
  const std::string dir =
      testing::edited_fixture("granite", "granite_scaling6", [](json& c) { c["logits_scaling"] = 6.0; });
  std::vector<float> logits = exported_logits(dir, "granite_scaling6", small_options(), ref.prompt_tokens, 12);
  std::vector<float> expected = ref.logits;
  for (float& value : logits) value *= 6.0f;
  for (float& value : expected) value *= 8.0f;
  testing::expect_logits_near(logits, expected, 1e-4, "logits_scaling 6");
  auto program = testing::exported_program(dir, "granite_scaling6_program");
  ASSERT_NE(program, nullptr);
  EXPECT_TRUE(has(constant_names(*program), "model.logits_scaling"));
}

TEST(GraniteExportTest, APowerOfTwoLogitsScalingIsFoldedIntoTheFinalNorm) {
  auto program = testing::exported_program(testing::fixture_dir("granite"), "granite_folded");
  ASSERT_NE(program, nullptr);
  const std::vector<std::string> names = constant_names(*program);
  EXPECT_FALSE(has(names, "model.logits_scaling"));
  EXPECT_TRUE(has(names, "model.embedding_multiplier"));
  EXPECT_TRUE(has(names, "model.residual_multiplier"));
  EXPECT_DOUBLE_EQ(*metadata_float(*program, key::kAttentionScale), 0.5);
}

// GraniteConfig's defaults are 1: no multiplier constant, and scores scaled by 1 (not 1/sqrt(D)).
TEST(GraniteExportTest, MultipliersOfOneAddNothing) {
  const std::string dir = testing::edited_fixture("granite", "granite_defaults", [](json& c) {
    for (const char* multiplier :
         {"embedding_multiplier", "attention_multiplier", "residual_multiplier", "logits_scaling"}) {
      c.erase(multiplier);
    }
  });
  auto program = testing::exported_program(dir, "granite_defaults");
  ASSERT_NE(program, nullptr);
  const std::vector<std::string> names = constant_names(*program);
  for (const char* name : {"model.embedding_multiplier", "model.residual_multiplier", "model.logits_scaling"}) {
    EXPECT_FALSE(has(names, name)) << name;
  }
  EXPECT_DOUBLE_EQ(*metadata_float(*program, key::kAttentionScale), 1.0);
}

TEST(GraniteExportTest, HalfPrecisionCacheAndWeightsStayClose) {
  testing::expect_half_precision_close("granite");
}

class GraniteRefusalTest : public ::testing::TestWithParam<testing::Refusal> {};

TEST_P(GraniteRefusalTest, NamesTheFieldTheValueAndWhatIsSupported) {
  testing::expect_refused(testing::fixture_dir("granite"), GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    Fields, GraniteRefusalTest,
    ::testing::Values(
        testing::Refusal{"multiplier", [](json& c) { c["residual_multiplier"] = -0.22; }, StatusCode::kInvalidArgument,
                         "key 'residual_multiplier': expected a number > 0, found -0.22"},
        testing::Refusal{"scaling", [](json& c) { c["logits_scaling"] = "8"; }, StatusCode::kInvalidArgument,
                         "key 'logits_scaling': expected a number > 0, found \"8\""},
        testing::Refusal{"activation", [](json& c) { c["hidden_act"] = "gelu"; }, StatusCode::kUnimplemented,
                         "hidden_act 'gelu' is not supported (supported: silu)"},
        testing::Refusal{"mlp_bias", [](json& c) { c["mlp_bias"] = true; }, StatusCode::kUnimplemented,
                         "mlp_bias = true is not supported (supported: false)"}),
    [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace staticlm
