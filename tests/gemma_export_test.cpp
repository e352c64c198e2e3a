// SPDX-License-Identifier: Apache-2.0
// Gemma 2 and 3 beyond the logits every family is held to (hf_export_test, delegated_export_test):
// the other ways real configs spell the same model (sliding_window_pattern instead of layer_types,
// transformers 5's rope_parameters by layer type, a Gemma3ForConditionalGeneration's sparse
// text_config and tensor names) give the PyTorch reference's logits; the windows hold at any cache
// length; half precision stays within the other families' bound; the program says how its layers
// attend and the runner checks it; each refusal names the field; the fixture's Gemma-style
// tokenizer encodes as the script's encoder does.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "staticlm/contracts/hf_static_v1_spec.h"
#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/format/metadata.h"
#include "staticlm/format/program_writer.h"
#include "staticlm/llm/tokenizer/tokenizer.h"

#include "export_helpers.h"
#include "fixture_edit.h"
#include "fixture_reference.h"
#include "session_helper.h"

namespace staticlm {
namespace {

using nlohmann::json;
using testing::copy_fixture;
using testing::edit_config;
using testing::small_options;
using testing::temp_path;

// The logits of the reference's prompt through `dir`'s export: 12 tokens through prefill (a full
// chunk of 8 and a partial one), the rest through decode.
std::vector<float> exported_logits(const std::string& dir, const std::string& name,
                                   HfStaticExportOptions options = small_options()) {
  const testing::FixtureReference ref = testing::load_fixture_reference("gemma3");
  const std::string path = temp_path(name + ".slm");
  auto summary = export_hf_static(dir, path, options);
  EXPECT_TRUE(summary.ok()) << summary.status().to_string();
  if (!summary.ok()) return {};
  auto opened = testing::open_test_session(path);
  EXPECT_TRUE(opened.ok()) << opened.status().to_string();
  if (!opened.ok()) return {};
  return testing::feed_prompt(*opened->session, ref.prompt_tokens, 12);
}

json read_json(const std::filesystem::path& path) {
  return json::parse(std::ifstream(path));
}

// Renames every tensor of dir/model.safetensors by `rename` and adds a small vision tensor, the
// data untouched (offsets are relative to the data), as a multimodal checkpoint holds them.
void rewrite_tensor_names(const std::string& dir, const std::function<std::string(const std::string&)>& rename) {
  const std::filesystem::path path = std::filesystem::path(dir) / "model.safetensors";
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), sizeof(header_size));
  const json header = json::parse(bytes.substr(8, header_size));
  std::string data = bytes.substr(8 + header_size);
  json renamed = json::object();
  for (const auto& [name, entry] : header.items()) {
    renamed[name == "__metadata__" ? name : rename(name)] = entry;
  }
  const uint64_t end = data.size();
  renamed["vision_tower.vision_model.post_layernorm.weight"] = {
      {"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {end, end + 8}}};
  data.append(8, '\0');
  const std::string text = renamed.dump();
  const uint64_t size = text.size();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(&size), sizeof(size));
  out << text << data;
}

// gemma3's config as Gemma3Config writes a Gemma3ForConditionalGeneration's: the text model's keys
// in text_config, only those that differ from Gemma3TextConfig's defaults (tie_word_embeddings,
// rope_theta, rope_local_base_freq, hidden_activation, rms_norm_eps and the token ids among the
// omitted), the eos list at the top level; its tensors under language_model.model.
std::string make_multimodal(const std::string& name) {
  const std::string dir = copy_fixture("gemma3", name);
  const json text = read_json(std::filesystem::path(dir) / "config.json");
  json text_config = {{"model_type", "gemma3_text"}};
  for (const char* key : {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                          "num_key_value_heads", "head_dim", "max_position_embeddings", "query_pre_attn_scalar",
                          "rope_scaling", "sliding_window", "layer_types"}) {
    text_config[key] = text[key];
  }
  const json config = {{"architectures", {"Gemma3ForConditionalGeneration"}},
                       {"model_type", "gemma3"},
                       {"eos_token_id", {1, 5}},
                       {"image_token_index", 262144},
                       {"mm_tokens_per_image", 256},
                       {"text_config", text_config},
                       {"torch_dtype", "bfloat16"},
                       {"vision_config", {{"model_type", "siglip_vision_model"}, {"hidden_size", 1152}}}};
  std::ofstream(std::filesystem::path(dir) / "config.json") << config.dump(2);
  rewrite_tensor_names(dir, [](const std::string& tensor) { return "language_model." + tensor; });
  return dir;
}

struct ConfigVariant {
  std::string name;
  std::function<std::string(const std::string& name)> make;  // the checkpoint directory
};

class GemmaConfigVariantTest : public ::testing::TestWithParam<ConfigVariant> {};

TEST_P(GemmaConfigVariantTest, GivesTheReferenceLogits) {
  const ConfigVariant& variant = GetParam();
  const testing::FixtureReference ref = testing::load_fixture_reference("gemma3");
  ASSERT_FALSE(ref.logits.empty()) << ref.dir;
  const std::string dir = variant.make("gemma3_" + variant.name);
  testing::expect_logits_near(exported_logits(dir, variant.name), ref.logits, 1e-4, variant.name);
}

INSTANTIATE_TEST_SUITE_P(
    Spellings, GemmaConfigVariantTest,
    ::testing::Values(
        // transformers 4.50 (the Gemma 3 1B release): no layer_types, the pattern says which slide.
        ConfigVariant{"sliding_window_pattern",
                      [](const std::string& name) {
                        const std::string dir = copy_fixture("gemma3", name);
                        edit_config(dir, [](json& c) {
                          c.erase("layer_types");
                          c.erase("_sliding_window_pattern");
                          c["sliding_window_pattern"] = 3;
                        });
                        return dir;
                      }},
        // transformers 5: theta and scaling in rope_parameters, keyed by layer type.
        ConfigVariant{"rope_parameters",
                      [](const std::string& name) {
                        const std::string dir = copy_fixture("gemma3", name);
                        edit_config(dir, [](json& c) {
                          c.erase("rope_theta");
                          c.erase("rope_scaling");
                          c.erase("rope_local_base_freq");
                          c["rope_parameters"] = {
                              {"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1e6}}},
                              {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}}}};
                        });
                        return dir;
                      }},
        ConfigVariant{"multimodal", make_multimodal}),
    [](const auto& param_info) { return param_info.param.name; });

// The window is in the mask, not in the cache's length: a cache just long enough for the prompt,
// one much longer, chunks shorter than the window, and the cpu backend all give the reference.
TEST(GemmaExportTest, WindowsHoldAtAnyCacheLength) {
  const testing::FixtureReference ref = testing::load_fixture_reference("gemma3");
  for (int64_t cache : {int64_t{20}, int64_t{512}}) {
    for (int64_t chunk : {int64_t{3}, int64_t{8}}) {
      HfStaticExportOptions options = small_options();
      options.max_cache_len = cache;
      options.prefill_len = chunk;
      const std::string name = str_cat("gemma3_cache", cache, "_chunk", chunk);
      testing::expect_logits_near(exported_logits(ref.dir, name, options), ref.logits, 1e-4, name);
    }
  }
}

// bf16 weights (exact: the checkpoint is bf16) and an f16 cache, the bound hf_export_test holds
// llama3 to.
TEST(GemmaExportTest, HalfPrecisionCacheAndWeightsStayClose) {
  for (const std::string family : {"gemma3", "gemma2"}) {
    const testing::FixtureReference ref = testing::load_fixture_reference(family);
    HfStaticExportOptions options = small_options();
    options.cache_dtype = DType::kF16;
    options.weight_dtype = DType::kBF16;
    const std::string path = temp_path(family + "_half.slm");
    ASSERT_TRUE(export_hf_static(ref.dir, path, options).ok()) << family;
    auto opened = testing::open_test_session(path);
    ASSERT_TRUE(opened.ok()) << opened.status().to_string();
    testing::expect_logits_near(testing::feed_prompt(*opened->session, ref.prompt_tokens, 12), ref.logits, 2e-2,
                                family + " bf16 weights, f16 cache");
  }
}

TEST(GemmaExportTest, TheProgramSaysHowItsLayersAttend) {
  namespace key = hf_static_v1::key;
  const std::string gemma3 = temp_path("gemma3_metadata.slm");
  ASSERT_TRUE(export_hf_static(testing::fixture_dir("gemma3"), gemma3, small_options()).ok());
  auto file = ProgramFile::open(gemma3);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(*metadata_int_list(**file, key::kAttentionWindow), (std::vector<int64_t>{5, 5, 0, 5}));
  EXPECT_DOUBLE_EQ(*metadata_float(**file, key::kRopeLocalTheta), 10000.0);
  EXPECT_DOUBLE_EQ(*metadata_float(**file, key::kRopeTheta), 1e6);
  EXPECT_EQ(*metadata_string(**file, key::kRopeScaling), "linear");  // the global layers'
  EXPECT_DOUBLE_EQ(*metadata_float(**file, key::kAttentionScale), 1.0 / std::sqrt(24.0));
  EXPECT_EQ((*file)->find_metadata(key::kAttnLogitSoftcap), nullptr);
  EXPECT_EQ((*file)->find_metadata(key::kFinalLogitSoftcap), nullptr);

  const std::string gemma2 = temp_path("gemma2_metadata.slm");
  ASSERT_TRUE(export_hf_static(testing::fixture_dir("gemma2"), gemma2, small_options()).ok());
  file = ProgramFile::open(gemma2);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(*metadata_int_list(**file, key::kAttentionWindow), (std::vector<int64_t>{6, 0, 6, 0}));
  EXPECT_EQ((*file)->find_metadata(key::kRopeLocalTheta), nullptr);
  EXPECT_EQ((*file)->find_metadata(key::kAttentionScale), nullptr);  // query_pre_attn_scalar = head_dim
  EXPECT_DOUBLE_EQ(*metadata_float(**file, key::kAttnLogitSoftcap), 3.0);
  EXPECT_DOUBLE_EQ(*metadata_float(**file, key::kFinalLogitSoftcap), 4.0);
}

// The runner checks the per-layer keys when it loads a program.
TEST(GemmaExportTest, TheRunnerRefusesWindowsThatDoNotFitTheLayers) {
  auto build = build_hf_static(testing::fixture_dir("gemma3"), small_options());
  ASSERT_TRUE(build.ok()) << build.status().to_string();
  for (MetadataSpec& entry : build->spec.metadata) {
    if (entry.key == hf_static_v1::key::kAttentionWindow) {
      entry.value = std::vector<int64_t>{5, 5, 0};
    }
  }
  const std::string path = temp_path("gemma3_bad_windows.slm");
  ASSERT_TRUE(write_program(build->spec, path).ok());
  auto opened = testing::open_test_session(path);
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.status().message().find("metadata 'attention_window': expected one window per layer (4), found 3"),
            std::string::npos)
      << opened.status().message();
}

struct Refusal {
  std::string name;
  std::function<void(json&)> edit;
  StatusCode code;
  std::string message;
};

class GemmaRefusalTest : public ::testing::TestWithParam<Refusal> {};

TEST_P(GemmaRefusalTest, NamesTheFieldTheValueAndWhatIsSupported) {
  const Refusal& refusal = GetParam();
  const std::string dir = copy_fixture("gemma3", "gemma3_refused_" + refusal.name);
  edit_config(dir, refusal.edit);
  const Status status = export_hf_static(dir, temp_path("gemma3_refused.slm"), small_options()).status();
  EXPECT_EQ(status.code(), refusal.code) << status.to_string();
  EXPECT_NE(status.message().find(refusal.message), std::string::npos) << status.message();
}

INSTANTIATE_TEST_SUITE_P(
    Fields, GemmaRefusalTest,
    ::testing::Values(
        Refusal{"activation", [](json& c) { c["hidden_activation"] = "relu"; }, StatusCode::kUnimplemented,
                "hidden_activation 'relu' is not supported (supported: gelu_pytorch_tanh, gelu)"},
        Refusal{"layer_type", [](json& c) { c["layer_types"][1] = "chunked_attention"; }, StatusCode::kUnimplemented,
                "layer_types[1] 'chunked_attention' is not supported (supported: sliding_attention, "
                "full_attention)"},
        Refusal{"layer_count", [](json& c) { c["layer_types"].erase(0); }, StatusCode::kInvalidArgument,
                "key 'layer_types': expected one entry per layer (4), found 3"},
        Refusal{"bidirectional", [](json& c) { c["use_bidirectional_attention"] = true; }, StatusCode::kUnimplemented,
                "use_bidirectional_attention = true is not supported (supported: false, causal attention)"},
        Refusal{"rope_type",
                [](json& c) {
                  c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 8.0}};
                },
                StatusCode::kUnimplemented,
                "rope_scaling type 'yarn' is not supported (supported: none, linear, llama3, longrope)"},
        Refusal{"sliding_rope",
                [](json& c) {
                  c.erase("rope_scaling");
                  c["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}}},
                                          {"sliding_attention", {{"rope_type", "linear"}, {"factor", 2.0}}}};
                },
                StatusCode::kUnimplemented,
                "rope_parameters.sliding_attention type 'linear' is not supported (supported: default"}),
    [](const auto& param_info) { return param_info.param.name; });

// The fixture's tokenizer.json is laid out as Gemma's (Replace normalizer, no pre-tokenizer, byte
// fallback, <bos> by the post-processor); the ids are scripts/fixturegen/gemma_tokenizer.py's.
TEST(GemmaExportTest, TheGemmaStyleTokenizerEncodesAsTheReference) {
  const std::string dir = testing::fixture_dir("gemma3");
  const json reference = read_json(std::filesystem::path(dir) / "reference.json");
  auto tokenizer = load_tokenizer_from_dir(dir);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
  ASSERT_GE(reference["tokenizer_cases"].size(), 5u);
  for (const json& c : reference["tokenizer_cases"]) {
    const std::string text = c["text"].get<std::string>();
    SCOPED_TRACE(text);
    auto ids = (*tokenizer)->encode(text, EncodeOptions{.add_special_tokens = false});
    ASSERT_TRUE(ids.ok()) << ids.status().to_string();
    EXPECT_EQ(*ids, c["ids"].get<std::vector<int32_t>>());
    auto decoded = (*tokenizer)->decode(*ids, false);
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(*decoded, text);
    auto with_bos = (*tokenizer)->encode(text);
    ASSERT_TRUE(with_bos.ok());
    ASSERT_FALSE(with_bos->empty());
    EXPECT_EQ(with_bos->front(), 2) << "<bos> first";
  }
}

}  // namespace
}  // namespace staticlm
