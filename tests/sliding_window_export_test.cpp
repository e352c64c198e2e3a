// SPDX-License-Identifier: Apache-2.0
// Mistral and Qwen2 (and Qwen3, which shares Qwen2's rule) honour a sliding window shorter than the
// cache, per layer, as their configs say: Mistral's on every layer, Qwen2's only with
// use_sliding_window, on the layers layer_types marks or, in older configs, those from
// max_window_layers on. The window holds at any cache length and chunk; the program says each
// layer's window; a window the model does not use is ignored.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "staticlm/contracts/hf_static_v1_spec.h"
#include "staticlm/format/metadata.h"

#include "family_export_helpers.h"
#include "fixture_reference.h"

namespace staticlm {
namespace {

using nlohmann::json;
using testing::edit_config;
using testing::exported_logits;
using testing::small_options;

namespace key = hf_static_v1::key;

// A copy of the variant's checkpoint to edit.
std::string copy_of(const testing::FixtureReference& ref, const std::string& name) {
  const std::string dir = testing::temp_path(name);
  std::filesystem::remove_all(dir);
  std::filesystem::copy(ref.dir, dir);
  return dir;
}

TEST(SlidingWindowExportTest, WindowsHoldAtAnyCacheLengthAndChunk) {
  for (const std::string family : {"mistral_window", "qwen2_window"}) {
    const testing::FixtureReference ref = testing::load_fixture_reference(family);
    ASSERT_FALSE(ref.logits.empty()) << ref.dir;
    for (int64_t cache : {int64_t{20}, int64_t{512}}) {
      for (int64_t chunk : {int64_t{3}, int64_t{8}}) {
        HfStaticExportOptions options = small_options();
        options.max_cache_len = cache;
        options.prefill_len = chunk;
        const std::string name = str_cat(family, "_cache", cache, "_chunk", chunk);
        testing::expect_logits_near(exported_logits(ref.dir, name, options, ref.prompt_tokens, 12), ref.logits, 1e-4,
                                    name);
      }
    }
  }
}

// transformers >= 4.53 writes layer_types; they say which layers slide, not max_window_layers.
TEST(SlidingWindowExportTest, Qwen2LayerTypesSayWhichLayersSlide) {
  const testing::FixtureReference ref = testing::load_fixture_reference("qwen2_window");
  const std::string same = copy_of(ref, "qwen2_layer_types");
  edit_config(same, [](json& c) {
    c["max_window_layers"] = 2;
    c["layer_types"] = {"full_attention", "sliding_attention"};
  });
  testing::expect_logits_near(exported_logits(same, "qwen2_layer_types", small_options(), ref.prompt_tokens, 12),
                              ref.logits, 1e-4, "layer_types");
  const std::string swapped = copy_of(ref, "qwen2_layer_types_swapped");
  edit_config(swapped, [](json& c) { c["layer_types"] = {"sliding_attention", "full_attention"}; });
  const std::vector<float> logits =
      exported_logits(swapped, "qwen2_layer_types_swapped", small_options(), ref.prompt_tokens, 12);
  EXPECT_GT(testing::worst_relative_error(logits, ref.logits), 1e-2) << "the other layer slides";
}

// Qwen2Config ignores sliding_window unless use_sliding_window is true (false when absent).
TEST(SlidingWindowExportTest, AWindowTheModelDoesNotUseIsIgnored) {
  const testing::FixtureReference base = testing::load_fixture_reference("qwen2");
  const testing::FixtureReference windowed = testing::load_fixture_reference("qwen2_window");
  for (const bool absent : {false, true}) {
    const std::string name = absent ? "qwen2_window_absent" : "qwen2_window_off";
    const std::string dir = copy_of(windowed, name);
    edit_config(dir, [absent](json& c) {
      if (absent) {
        c.erase("use_sliding_window");
      } else {
        c["use_sliding_window"] = false;
      }
    });
    testing::expect_logits_near(exported_logits(dir, name, small_options(), base.prompt_tokens, 12), base.logits, 1e-4,
                                name);
    auto program = testing::exported_program(dir, name + "_metadata");
    ASSERT_NE(program, nullptr);
    EXPECT_EQ(program->find_metadata(key::kAttentionWindow), nullptr) << name;
  }
}

TEST(SlidingWindowExportTest, TheProgramSaysEachLayersWindow) {
  auto mistral = testing::exported_program(testing::load_fixture_reference("mistral_window").dir, "mistral_windows");
  ASSERT_NE(mistral, nullptr);
  EXPECT_EQ(*metadata_int_list(*mistral, key::kAttentionWindow), (std::vector<int64_t>{5, 5}));

  auto qwen2 = testing::exported_program(testing::load_fixture_reference("qwen2_window").dir, "qwen2_windows");
  ASSERT_NE(qwen2, nullptr);
  EXPECT_EQ(*metadata_int_list(*qwen2, key::kAttentionWindow), (std::vector<int64_t>{0, 5}));

  // MistralConfig's default window where config.json has no sliding_window key: longer than this
  // cache, so it never bites (plain attention, the reference's logits).
  const testing::FixtureReference base = testing::load_fixture_reference("mistral");
  const std::string dir = copy_of(base, "mistral_default_window");
  edit_config(dir, [](json& c) { c.erase("sliding_window"); });
  auto defaulted = testing::exported_program(dir, "mistral_default_window");
  ASSERT_NE(defaulted, nullptr);
  EXPECT_EQ(*metadata_int_list(*defaulted, key::kAttentionWindow), (std::vector<int64_t>{4096, 4096}));
  testing::expect_logits_near(exported_logits(dir, "mistral_default_window", small_options(), base.prompt_tokens, 12),
                              base.logits, 1e-4, "mistral default window");
}

// Qwen3 reads the window as Qwen2 does: the sliding layer's logits move off the reference.
TEST(SlidingWindowExportTest, Qwen3SlidesAsQwen2Does) {
  const testing::FixtureReference ref = testing::load_fixture_reference("qwen3");
  const std::string dir = copy_of(ref, "qwen3_window");
  edit_config(dir, [](json& c) {
    c["use_sliding_window"] = true;
    c["sliding_window"] = 5;
    c["max_window_layers"] = 1;
  });
  auto program = testing::exported_program(dir, "qwen3_window");
  ASSERT_NE(program, nullptr);
  EXPECT_EQ(*metadata_int_list(*program, key::kAttentionWindow), (std::vector<int64_t>{0, 5}));
  const std::vector<float> logits = exported_logits(dir, "qwen3_window", small_options(), ref.prompt_tokens, 12);
  EXPECT_GT(testing::worst_relative_error(logits, ref.logits), 1e-2);
}

TEST(SlidingWindowExportTest, RefusesALayerTypeItDoesNotKnow) {
  testing::expect_refused(testing::load_fixture_reference("qwen2_window").dir,
                          {"qwen2_layer_type",
                           [](json& c) {
                             c["layer_types"] = {"full_attention", "chunked_attention"};
                           },
                           StatusCode::kUnimplemented,
                           "layer_types[1] 'chunked_attention' is not supported (supported: sliding_attention, "
                           "full_attention)"});
}

}  // namespace
}  // namespace staticlm
