// SPDX-License-Identifier: Apache-2.0
// Phi-3 / Phi-4-mini beyond the logits every family is held to (hf_export_test,
// delegated_export_test): longrope's factor set follows the exported cache length (the short
// factors up to original_max_position_embeddings, as transformers picks them for a sequence that
// long), the other spellings real configs use give the same program, the program says which set
// and attention factor it has and the runner checks them, half precision stays within the bound,
// and each refusal names the field.
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

constexpr size_t kOriginalLength = 16;  // the fixture's original_max_position_embeddings

TEST(Phi3ExportTest, ShortFactorsUpToTheOriginalLength) {
  const testing::FixtureReference ref = testing::load_fixture_reference("phi3");
  const std::vector<float> expected =
      testing::load_reference_logits("phi3", "short_factor_logits_file", kOriginalLength);
  ASSERT_FALSE(expected.empty());
  HfStaticExportOptions options = small_options();
  options.max_cache_len = static_cast<int64_t>(kOriginalLength);
  const std::vector<int32_t> prompt(ref.prompt_tokens.begin(), ref.prompt_tokens.begin() + kOriginalLength);
  testing::expect_logits_near(exported_logits(ref.dir, "phi3_short", options, prompt, 12), expected, 1e-4,
                              "short factors");
  // The long factors rotate differently: the sets are not interchangeable.
  EXPECT_GT(testing::worst_relative_error(expected, std::span(ref.logits).first(expected.size())), 1e-3);
}

// One position beyond the original length takes the long factors, as transformers does for a
// sequence that long; prefill chunks of 3 across both windows.
TEST(Phi3ExportTest, LongFactorsBeyondIt) {
  const testing::FixtureReference ref = testing::load_fixture_reference("phi3");
  HfStaticExportOptions options = small_options();
  options.max_cache_len = static_cast<int64_t>(ref.prompt_tokens.size());
  options.prefill_len = 3;
  testing::expect_logits_near(exported_logits(ref.dir, "phi3_long", options, ref.prompt_tokens, 12), ref.logits, 1e-4,
                              "long factors");
}

struct Spelling {
  std::string name;
  std::function<void(json&)> edit;
};

class Phi3SpellingTest : public ::testing::TestWithParam<Spelling> {};

TEST_P(Phi3SpellingTest, GivesTheReferenceLogits) {
  const testing::FixtureReference ref = testing::load_fixture_reference("phi3");
  const std::string dir = testing::edited_fixture("phi3", "phi3_" + GetParam().name, GetParam().edit);
  testing::expect_logits_near(exported_logits(dir, GetParam().name, small_options(), ref.prompt_tokens, 12), ref.logits,
                              1e-4, GetParam().name);
}

INSTANTIATE_TEST_SUITE_P(
    Configs, Phi3SpellingTest,
    ::testing::Values(
        // Phi-3-mini-128k's first configs: "su", Phi3Config's old name for longrope.
        Spelling{"su", [](json& c) { c["rope_scaling"]["type"] = "su"; }},
        // The attention factor written out, as transformers' default computes it: sqrt(1 + ln 32 / ln 16).
        Spelling{"attention_factor", [](json& c) { c["rope_scaling"]["attention_factor"] = 1.5; }},
        // transformers 5: theta, the scaling and the rotary fraction in rope_parameters.
        Spelling{"rope_parameters",
                 [](json& c) {
                   json parameters = c["rope_scaling"];
                   parameters.erase("type");
                   parameters["rope_type"] = "longrope";
                   parameters["rope_theta"] = c["rope_theta"];
                   parameters["partial_rotary_factor"] = c["partial_rotary_factor"];
                   c.erase("rope_scaling");
                   c.erase("rope_theta");
                   c.erase("partial_rotary_factor");
                   c["rope_parameters"] = parameters;
                 }}),
    [](const auto& param_info) { return param_info.param.name; });

// The attention factor is read, not assumed: another one moves the logits.
TEST(Phi3ExportTest, TheAttentionFactorIsTheConfigs) {
  const testing::FixtureReference ref = testing::load_fixture_reference("phi3");
  const std::string dir =
      testing::edited_fixture("phi3", "phi3_unit_factor", [](json& c) { c["rope_scaling"]["attention_factor"] = 1.0; });
  const std::vector<float> logits = exported_logits(dir, "phi3_unit_factor", small_options(), ref.prompt_tokens, 12);
  EXPECT_GT(testing::worst_relative_error(logits, ref.logits), 1e-2);
}

TEST(Phi3ExportTest, TheProgramSaysHowItRotates) {
  auto program = testing::exported_program(testing::fixture_dir("phi3"), "phi3_metadata");
  ASSERT_NE(program, nullptr);
  EXPECT_EQ(*metadata_string(*program, key::kRopeScaling), "longrope");
  EXPECT_EQ(*metadata_int(*program, key::kRopeRotaryDim), 12);  // 16 x 0.75
  EXPECT_EQ(*metadata_int(*program, key::kRopeOriginalMaxPosition), 16);
  EXPECT_EQ(*metadata_string(*program, key::kRopeFactorSet), "long");  // max_cache_len 64
  EXPECT_DOUBLE_EQ(*metadata_float(*program, key::kRopeAttentionFactor), 1.5);
  EXPECT_EQ(*metadata_int_list(*program, key::kAttentionWindow), (std::vector<int64_t>{7, 7}));
  EXPECT_EQ(program->find_metadata(key::kRopeFactor), nullptr);

  HfStaticExportOptions short_cache = small_options();
  short_cache.max_cache_len = 16;
  auto short_program = testing::exported_program(testing::fixture_dir("phi3"), "phi3_metadata_short", short_cache);
  ASSERT_NE(short_program, nullptr);
  EXPECT_EQ(*metadata_string(*short_program, key::kRopeFactorSet), "short");
}

TEST(Phi3ExportTest, TheRunnerRefusesAFactorSetThatDoesNotFitTheCache) {
  const Status status = testing::open_with_metadata(testing::fixture_dir("phi3"), "phi3_bad_factor_set",
                                                    key::kRopeFactorSet, std::string("short"));
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("metadata 'rope_factor_set': expected 'long' for max_cache_len 64 and "
                                  "rope_original_max_position 16, found 'short'"),
            std::string::npos)
      << status.message();
}

TEST(Phi3ExportTest, HalfPrecisionCacheAndWeightsStayClose) {
  testing::expect_half_precision_close("phi3");
}

class Phi3RefusalTest : public ::testing::TestWithParam<testing::Refusal> {};

TEST_P(Phi3RefusalTest, NamesTheFieldTheValueAndWhatIsSupported) {
  testing::expect_refused(testing::fixture_dir("phi3"), GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    Fields, Phi3RefusalTest,
    ::testing::Values(
        testing::Refusal{"rope_type", [](json& c) { c["rope_scaling"]["type"] = "yarn"; }, StatusCode::kUnimplemented,
                         "rope_scaling type 'yarn' is not supported (supported: none, linear, llama3, longrope)"},
        testing::Refusal{"factor_count", [](json& c) { c["rope_scaling"]["long_factor"].erase(0); },
                         StatusCode::kInvalidArgument,
                         "key 'rope_scaling.long_factor': expected 6 factors (head_dim 16 x partial_rotary_factor 0.75 "
                         "/ 2), found 5"},
        testing::Refusal{
            "factor_missing", [](json& c) { c["rope_scaling"].erase("short_factor"); }, StatusCode::kInvalidArgument,
            "missing required key 'rope_scaling.short_factor' (expected a non-empty array of numbers > 0)"},
        testing::Refusal{"factor_value", [](json& c) { c["rope_scaling"]["short_factor"][2] = -1.0; },
                         StatusCode::kInvalidArgument,
                         "key 'rope_scaling.short_factor': expected a non-empty array of numbers > 0"},
        testing::Refusal{"activation", [](json& c) { c["hidden_act"] = "gelu_new"; }, StatusCode::kUnimplemented,
                         "hidden_act 'gelu_new' is not supported (supported: silu)"},
        // Two kv heads: qkv_proj would hold 32 + 32 + 32 rows, the checkpoint's holds 64.
        testing::Refusal{"fused_shape", [](json& c) { c["num_key_value_heads"] = 2; }, StatusCode::kInvalidArgument,
                         "tensor 'model.layers.0.self_attn.qkv_proj.weight': expected shape [96,32] (rows: q 32, k "
                         "32, v 32), found [64,32]"}),
    [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace staticlm
