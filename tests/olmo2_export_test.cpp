// SPDX-License-Identifier: Apache-2.0
// OLMo 2 beyond the logits every family is held to (hf_export_test, delegated_export_test): its
// q_norm / k_norm span the whole projection (the program normalizes heads x head_dim channels
// before the split), it has no norm before attention or the MLP, half precision stays within the
// bound, and each refusal names the field.
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

// The norms as the program holds them: q_norm over 4 heads x 8, k_norm over 2 x 8; no input norm.
TEST(Olmo2ExportTest, TheQkNormsSpanTheWholeProjection) {
  auto program = testing::exported_program(testing::fixture_dir("olmo2"), "olmo2_norms");
  ASSERT_NE(program, nullptr);
  size_t q_norms = 0;
  for (const fb::Constant* constant : *program->program().constants()) {
    const std::string name = constant->name()->str();
    EXPECT_EQ(name.find("input_layernorm"), std::string::npos) << name;
    if (name.ends_with("self_attn.q_norm.weight")) {
      ++q_norms;
      EXPECT_EQ(constant->shape()->size(), 1u);
      EXPECT_EQ(constant->shape()->Get(0), 32) << name;
    }
    if (name.ends_with("self_attn.k_norm.weight")) {
      EXPECT_EQ(constant->shape()->Get(0), 16) << name;
    }
  }
  EXPECT_EQ(q_norms, 2u);
}

TEST(Olmo2ExportTest, HalfPrecisionCacheAndWeightsStayClose) {
  testing::expect_half_precision_close("olmo2");
}

class Olmo2RefusalTest : public ::testing::TestWithParam<testing::Refusal> {};

TEST_P(Olmo2RefusalTest, NamesTheFieldTheValueAndWhatIsSupported) {
  testing::expect_refused(testing::fixture_dir("olmo2"), GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    Fields, Olmo2RefusalTest,
    ::testing::Values(testing::Refusal{"activation", [](json& c) { c["hidden_act"] = "swiglu"; },
                                       StatusCode::kUnimplemented,
                                       "hidden_act 'swiglu' is not supported (supported: silu)"},
                      testing::Refusal{"rope_type",
                                       [](json& c) {
                                         c["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
                                       },
                                       StatusCode::kUnimplemented,
                                       "rope_scaling type 'dynamic' is not supported (supported: none, linear, llama3, "
                                       "longrope)"},
                      // A head_dim the weights were not made for: the first constant that disagrees.
                      testing::Refusal{"head_dim", [](json& c) { c["head_dim"] = 16; }, StatusCode::kInvalidArgument,
                                       "constant 'model.layers.0.self_attn.q_proj.weight' (layer 0 q_proj): expected "
                                       "shape [64,32], found [32,32]"}),
    [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace staticlm
