// SPDX-License-Identifier: Apache-2.0
// SmolLM3 beyond the logits every family is held to (hf_export_test, delegated_export_test): the
// layers no_rope_layers marks attend without rope (every no_rope_layer_interval-th where the list
// is absent), the program says which layers rotate and the runner checks it, windows go to those
// layers under use_sliding_window, half precision stays within the bound, and each refusal names
// the field.
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

// SmolLM3Config fills no_rope_layers from no_rope_layer_interval (here 2: layer 1 has no rope).
TEST(SmolLM3ExportTest, TheIntervalSaysWhichLayersRotateWhereTheListIsAbsent) {
  const testing::FixtureReference ref = testing::load_fixture_reference("smollm3");
  const std::string dir =
      testing::edited_fixture("smollm3", "smollm3_interval", [](json& c) { c.erase("no_rope_layers"); });
  testing::expect_logits_near(exported_logits(dir, "smollm3_interval", small_options(), ref.prompt_tokens, 12),
                              ref.logits, 1e-4, "no_rope_layer_interval");
}

// The rope-less layer is real: rotating it too moves the logits off the reference.
TEST(SmolLM3ExportTest, ALayerWithoutRopeDoesNotRotate) {
  const testing::FixtureReference ref = testing::load_fixture_reference("smollm3");
  const std::string dir = testing::edited_fixture("smollm3", "smollm3_all_rope", [](json& c) {
    c["no_rope_layers"] = {1, 1};
  });
  const std::vector<float> logits = exported_logits(dir, "smollm3_all_rope", small_options(), ref.prompt_tokens, 12);
  EXPECT_GT(testing::worst_relative_error(logits, ref.logits), 1e-2);
}

TEST(SmolLM3ExportTest, TheProgramSaysWhichLayersRotate) {
  auto program = testing::exported_program(testing::fixture_dir("smollm3"), "smollm3_metadata");
  ASSERT_NE(program, nullptr);
  EXPECT_EQ(*metadata_int_list(*program, key::kRopeLayers), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(program->find_metadata(key::kAttentionWindow), nullptr);  // use_sliding_window is false
  EXPECT_DOUBLE_EQ(*metadata_float(*program, key::kRopeTheta), 5e6);

  // Every layer rotating: the key is absent, as in every other family's program.
  const std::string dir = testing::edited_fixture("smollm3", "smollm3_metadata_all_rope", [](json& c) {
    c["no_rope_layers"] = {1, 1};
  });
  auto all_rope = testing::exported_program(dir, "smollm3_metadata_all_rope");
  ASSERT_NE(all_rope, nullptr);
  EXPECT_EQ(all_rope->find_metadata(key::kRopeLayers), nullptr);
}

// With use_sliding_window and no layer_types, SmolLM3Config slides the layers without rope.
TEST(SmolLM3ExportTest, WindowsGoToTheLayersWithoutRope) {
  const std::string dir = testing::edited_fixture("smollm3", "smollm3_window", [](json& c) {
    c.erase("layer_types");
    c["use_sliding_window"] = true;
    c["sliding_window"] = 5;
  });
  auto program = testing::exported_program(dir, "smollm3_window");
  ASSERT_NE(program, nullptr);
  EXPECT_EQ(*metadata_int_list(*program, key::kAttentionWindow), (std::vector<int64_t>{0, 5}));
}

TEST(SmolLM3ExportTest, TheRunnerRefusesRopeLayersThatDoNotFitTheLayers) {
  const std::string dir = testing::fixture_dir("smollm3");
  Status status =
      testing::open_with_metadata(dir, "smollm3_rope_layers_count", key::kRopeLayers, std::vector<int64_t>{1, 0, 1});
  EXPECT_NE(status.message().find("metadata 'rope_layers': expected one entry per layer (2), found 3"),
            std::string::npos)
      << status.to_string();
  status = testing::open_with_metadata(dir, "smollm3_rope_layers_value", key::kRopeLayers, std::vector<int64_t>{1, 2});
  EXPECT_NE(status.message().find("metadata 'rope_layers': expected 0 or 1 per layer, found 2"), std::string::npos)
      << status.to_string();
}

TEST(SmolLM3ExportTest, HalfPrecisionCacheAndWeightsStayClose) {
  testing::expect_half_precision_close("smollm3");
}

class SmolLM3RefusalTest : public ::testing::TestWithParam<testing::Refusal> {};

TEST_P(SmolLM3RefusalTest, NamesTheFieldTheValueAndWhatIsSupported) {
  testing::expect_refused(testing::fixture_dir("smollm3"), GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    Fields, SmolLM3RefusalTest,
    ::testing::Values(
        testing::Refusal{"flag",
                         [](json& c) {
                           c["no_rope_layers"] = {1, 2};
                         },
                         StatusCode::kInvalidArgument,
                         "key 'no_rope_layers': expected an array of 0 and 1, one per layer, found [1,2]"},
        testing::Refusal{"count", [](json& c) { c["no_rope_layers"] = {1}; }, StatusCode::kInvalidArgument,
                         "key 'no_rope_layers': expected an entry for each of the 2 layers, found 1"},
        testing::Refusal{"activation", [](json& c) { c["hidden_act"] = "relu"; }, StatusCode::kUnimplemented,
                         "hidden_act 'relu' is not supported (supported: silu)"},
        testing::Refusal{"mlp_bias", [](json& c) { c["mlp_bias"] = true; }, StatusCode::kUnimplemented,
                         "mlp_bias = true is not supported (supported: false)"}),
    [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace staticlm
