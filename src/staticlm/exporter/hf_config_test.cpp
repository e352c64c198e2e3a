// SPDX-License-Identifier: Apache-2.0
#include "staticlm/exporter/hf_config.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "staticlm/exporter/model_family.h"
#include "staticlm/exporter/readers_test_files.h"

namespace staticlm {
namespace {

using nlohmann::json;
using testing_files::ScratchDir;

// Llama-3.1-8B-Instruct's config.json and generation_config.json, as published.
constexpr std::string_view kLlama31Config = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu",
  "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
  "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.42.3", "use_cache": true, "vocab_size": 128256
})";
constexpr std::string_view kLlama31Generation = R"({
  "bos_token_id": 128000, "do_sample": true, "eos_token_id": [128001, 128008, 128009],
  "temperature": 0.6, "top_p": 0.9, "transformers_version": "4.42.3"
})";

// Qwen2.5-0.5B-Instruct.
constexpr std::string_view kQwen25Config = R"({
  "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
  "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
  "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 21,
  "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000.0, "sliding_window": 32768,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.43.1",
  "use_cache": true, "use_sliding_window": false, "vocab_size": 151936
})";
constexpr std::string_view kQwen25Generation = R"({
  "bos_token_id": 151643, "pad_token_id": 151643, "do_sample": true, "eos_token_id": [151645, 151643],
  "repetition_penalty": 1.1, "temperature": 0.7, "top_p": 0.8, "top_k": 20,
  "transformers_version": "4.37.0"
})";

// Mistral-7B-Instruct-v0.3.
constexpr std::string_view kMistralConfig = R"({
  "architectures": ["MistralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
  "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
  "max_position_embeddings": 32768, "model_type": "mistral", "num_attention_heads": 32,
  "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0,
  "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.42.0.dev0", "use_cache": true, "vocab_size": 32768
})";

// The smallest config that loads: only the required keys.
json minimal_config() {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"vocab_size", 256},
          {"hidden_size", 64},
          {"intermediate_size", 128},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4}};
}

Result<HfConfig> load_config(const ScratchDir& dir, const json& config) {
  dir.write("config.json", config.dump());
  return HfConfig::load(dir.path());
}

void expect_error(const Result<HfConfig>& loaded, StatusCode code, std::string_view substring) {
  ASSERT_FALSE(loaded.ok()) << "a bad config loaded";
  EXPECT_EQ(loaded.status().code(), code) << loaded.status().to_string();
  EXPECT_NE(loaded.status().message().find(substring), std::string::npos)
      << "message: " << loaded.status().message() << "\nexpected to contain: " << substring;
}

TEST(HfConfigTest, Llama31WithLlama3RopeScaling) {
  ScratchDir dir;
  dir.write("config.json", kLlama31Config);
  dir.write("generation_config.json", kLlama31Generation);
  auto config = HfConfig::load(dir.path());
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  EXPECT_EQ(config->architectures, std::vector<std::string>{"LlamaForCausalLM"});
  EXPECT_EQ(config->model_type, "llama");
  EXPECT_EQ(config->config_path, dir.file("config.json"));
  EXPECT_EQ(config->vocab_size, 128256);
  EXPECT_EQ(config->hidden_size, 4096);
  EXPECT_EQ(config->intermediate_size, 14336);
  EXPECT_EQ(config->num_hidden_layers, 32);
  EXPECT_EQ(config->num_attention_heads, 32);
  EXPECT_EQ(config->num_key_value_heads, 8);
  EXPECT_EQ(config->head_dim, 128);
  EXPECT_DOUBLE_EQ(config->rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(config->rope_theta, 500000.0);
  EXPECT_EQ(config->rope_scaling.type, RopeScaling::kLlama3);
  EXPECT_DOUBLE_EQ(config->rope_scaling.factor, 8.0);
  EXPECT_DOUBLE_EQ(config->rope_scaling.low_freq_factor, 1.0);
  EXPECT_DOUBLE_EQ(config->rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(config->rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(config->max_position_embeddings, 131072);
  EXPECT_FALSE(config->tie_word_embeddings);
  EXPECT_FALSE(config->attention_bias);
  EXPECT_FALSE(config->mlp_bias);
  EXPECT_EQ(config->hidden_act, "silu");
  EXPECT_EQ(config->torch_dtype, "bfloat16");
  EXPECT_EQ(config->bos_token_id, 128000);
  EXPECT_EQ(config->eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_FALSE(config->pad_token_id.has_value());
  EXPECT_FALSE(config->sliding_window.has_value());
  EXPECT_TRUE(config->has_generation_config);
  EXPECT_EQ(config->generation.do_sample, true);
  EXPECT_EQ(config->generation.temperature, 0.6);
  EXPECT_EQ(config->generation.top_p, 0.9);
  EXPECT_FALSE(config->generation.top_k.has_value());
  EXPECT_FALSE(config->generation.min_p.has_value());
  EXPECT_FALSE(config->generation.repetition_penalty.has_value());

  auto rope = config->rope_params(64);
  ASSERT_TRUE(rope.ok()) << rope.status().to_string();
  EXPECT_DOUBLE_EQ(rope->theta, 500000.0);
  EXPECT_EQ(rope->rotary_dim, 128);
  EXPECT_EQ(rope->scaling, RopeScaling::kLlama3);
  EXPECT_DOUBLE_EQ(rope->factor, 8.0);
  EXPECT_DOUBLE_EQ(rope->low_freq_factor, 1.0);
  EXPECT_DOUBLE_EQ(rope->high_freq_factor, 4.0);
  EXPECT_EQ(rope->original_max_position, 8192);
}

TEST(HfConfigTest, Qwen2WithAnUnusedSlidingWindow) {
  ScratchDir dir;
  dir.write("config.json", kQwen25Config);
  dir.write("generation_config.json", kQwen25Generation);
  auto config = HfConfig::load(dir.path());
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  EXPECT_EQ(config->architectures, std::vector<std::string>{"Qwen2ForCausalLM"});
  EXPECT_EQ(config->num_attention_heads, 14);
  EXPECT_EQ(config->num_key_value_heads, 2);
  EXPECT_EQ(config->head_dim, 64);  // 896 / 14
  EXPECT_DOUBLE_EQ(config->rms_norm_eps, 1e-6);
  EXPECT_DOUBLE_EQ(config->rope_theta, 1e6);
  EXPECT_EQ(config->rope_scaling.type, RopeScaling::kNone);
  EXPECT_TRUE(config->tie_word_embeddings);
  EXPECT_EQ(config->sliding_window, 32768);
  EXPECT_EQ(config->use_sliding_window, false);
  EXPECT_FALSE(config->effective_sliding_window().has_value());
  // config says 151645; generation_config adds 151643.
  EXPECT_EQ(config->eos_token_ids, (std::vector<int64_t>{151645, 151643}));
  EXPECT_EQ(config->bos_token_id, 151643);
  EXPECT_EQ(config->pad_token_id, 151643);
  EXPECT_EQ(config->generation.top_k, 20);
  EXPECT_EQ(config->generation.repetition_penalty, 1.1);
  EXPECT_EQ(config->generation.temperature, 0.7);
  EXPECT_EQ(config->generation.top_p, 0.8);
  auto rope = config->rope_params(64);
  ASSERT_TRUE(rope.ok()) << rope.status().to_string();
  EXPECT_EQ(rope->scaling, RopeScaling::kNone);
  EXPECT_EQ(rope->rotary_dim, 64);
}

TEST(HfConfigTest, MistralWithANullSlidingWindow) {
  ScratchDir dir;
  dir.write("config.json", kMistralConfig);
  auto config = HfConfig::load(dir.path());
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  EXPECT_EQ(config->model_type, "mistral");
  EXPECT_FALSE(config->sliding_window.has_value());
  EXPECT_FALSE(config->effective_sliding_window().has_value());
  EXPECT_EQ(config->head_dim, 128);
  EXPECT_EQ(config->eos_token_ids, std::vector<int64_t>{2});
  EXPECT_EQ(config->bos_token_id, 1);
  EXPECT_FALSE(config->has_generation_config);
  EXPECT_FALSE(config->generation.temperature.has_value());

  // Mistral v0.1 uses its window, and says so only by setting it.
  json v01 = json::parse(kMistralConfig);
  v01["sliding_window"] = 4096;
  auto windowed = load_config(dir, v01);
  ASSERT_TRUE(windowed.ok()) << windowed.status().to_string();
  EXPECT_EQ(windowed->effective_sliding_window(), 4096);
}

TEST(HfConfigTest, DefaultsForAbsentKeys) {
  ScratchDir dir;
  auto config = load_config(dir, minimal_config());
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  EXPECT_EQ(config->model_type, "");
  EXPECT_EQ(config->num_key_value_heads, 4);
  EXPECT_EQ(config->head_dim, 16);
  EXPECT_DOUBLE_EQ(config->rms_norm_eps, 1e-6);
  EXPECT_DOUBLE_EQ(config->rope_theta, 10000.0);
  EXPECT_EQ(config->rope_scaling.type, RopeScaling::kNone);
  EXPECT_DOUBLE_EQ(config->partial_rotary_factor, 1.0);
  EXPECT_FALSE(config->tie_word_embeddings);
  EXPECT_FALSE(config->attention_bias);
  EXPECT_FALSE(config->mlp_bias);
  EXPECT_EQ(config->max_position_embeddings, 2048);
  EXPECT_EQ(config->hidden_act, "silu");
  EXPECT_FALSE(config->bos_token_id.has_value());
  EXPECT_TRUE(config->eos_token_ids.empty());
  EXPECT_FALSE(config->torch_dtype.has_value());
  EXPECT_FALSE(config->use_sliding_window.has_value());
}

TEST(HfConfigTest, GenerationConfigEosIdsMergeInOrderWithoutDuplicates) {
  ScratchDir dir;
  json config = minimal_config();
  config["eos_token_id"] = 9;
  config["bos_token_id"] = 1;
  dir.write("generation_config.json",
            R"({"eos_token_id": [7, 9, 7, 8], "bos_token_id": 3, "min_p": 0.05, "top_k": 0, "do_sample": false})");
  auto loaded = load_config(dir, config);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->eos_token_ids, (std::vector<int64_t>{9, 7, 8}));
  EXPECT_EQ(loaded->bos_token_id, 3);
  EXPECT_EQ(loaded->generation.min_p, 0.05);
  EXPECT_EQ(loaded->generation.top_k, 0);
  EXPECT_EQ(loaded->generation.do_sample, false);
}

TEST(HfConfigTest, ExplicitAndNullHeadDim) {
  ScratchDir dir;
  json config = minimal_config();
  config["head_dim"] = 32;  // wider than hidden_size / heads, as Qwen3 and Mistral-Nemo do
  auto explicit_dim = load_config(dir, config);
  ASSERT_TRUE(explicit_dim.ok()) << explicit_dim.status().to_string();
  EXPECT_EQ(explicit_dim->head_dim, 32);
  EXPECT_EQ(explicit_dim->rope_params(64)->rotary_dim, 32);

  config["head_dim"] = nullptr;
  auto inferred = load_config(dir, config);
  ASSERT_TRUE(inferred.ok()) << inferred.status().to_string();
  EXPECT_EQ(inferred->head_dim, 16);

  config["hidden_size"] = 66;
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument,
               "key 'hidden_size': 66 is not divisible by num_attention_heads 4");
  config["head_dim"] = 16;
  EXPECT_TRUE(load_config(dir, config).ok());
}

TEST(HfConfigTest, KvHeadsMustDivideAttentionHeads) {
  ScratchDir dir;
  json config = minimal_config();
  config["num_key_value_heads"] = 3;
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument,
               "'" + dir.file("config.json") + "': key 'num_key_value_heads': 3 does not divide num_attention_heads 4");
  config["num_key_value_heads"] = 0;
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument,
               "key 'num_key_value_heads': expected a positive integer");
}

TEST(HfConfigTest, RefusesMissingRequiredKeys) {
  ScratchDir dir;
  for (const char* key :
       {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads"}) {
    json config = minimal_config();
    config.erase(key);
    expect_error(load_config(dir, config), StatusCode::kInvalidArgument,
                 std::string("': missing required key '") + key + "' (expected a positive integer)");
  }
  json config = minimal_config();
  config.erase("architectures");
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument, "missing required key 'architectures'");
  config["architectures"] = json::array();
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument,
               "key 'architectures': expected a non-empty array of class names, found []");
}

TEST(HfConfigTest, RefusesWrongTypesNamingKeyAndValue) {
  ScratchDir dir;
  json config = minimal_config();
  config["num_hidden_layers"] = "two";
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument,
               "'" + dir.file("config.json") +
                   "': key 'num_hidden_layers': expected a positive integer (at most 2147483647), found \"two\"");
  config = minimal_config();
  config["hidden_size"] = 64.5;
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument,
               "key 'hidden_size': expected a positive integer (at most 2147483647), found 64.5");
  config = minimal_config();
  config["vocab_size"] = -5;
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument, "key 'vocab_size': expected a positive integer");
  config = minimal_config();
  config["tie_word_embeddings"] = "yes";
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument,
               "key 'tie_word_embeddings': expected true or false, found \"yes\"");
  config = minimal_config();
  config["rms_norm_eps"] = 0;
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument,
               "key 'rms_norm_eps': expected a number > 0, found 0");
  config = minimal_config();
  config["eos_token_id"] = "</s>";
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument,
               "key 'eos_token_id': expected a non-negative token id, found \"</s>\"");
  config["eos_token_id"] = json::array({1, -2});
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument,
               "key 'eos_token_id': expected a non-negative token id or an array of them, found [1,-2]");
  config = minimal_config();
  config["hidden_act"] = 3;
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument, "key 'hidden_act': expected a string, found 3");
}

TEST(HfConfigTest, RopeScalingTypes) {
  ScratchDir dir;
  json config = minimal_config();
  config["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};  // the pre-4.43 key
  auto linear = load_config(dir, config);
  ASSERT_TRUE(linear.ok()) << linear.status().to_string();
  EXPECT_EQ(linear->rope_scaling.type, RopeScaling::kLinear);
  EXPECT_DOUBLE_EQ(linear->rope_params(64)->factor, 2.0);

  config["rope_scaling"] = {{"rope_type", "default"}};
  auto default_type = load_config(dir, config);
  ASSERT_TRUE(default_type.ok()) << default_type.status().to_string();
  EXPECT_EQ(default_type->rope_scaling.type, RopeScaling::kNone);

  config["rope_scaling"] = {{"rope_type", "linear"}};
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument,
               "missing required key 'rope_scaling.factor' (expected a number > 0)");
  config["rope_scaling"] = {{"rope_type", "linear"}, {"factor", -1}};
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument,
               "key 'rope_scaling.factor': expected a number > 0, found -1");
  config["rope_scaling"] = {
      {"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0}};
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument,
               "missing required key 'rope_scaling.original_max_position_embeddings'");
  config["rope_scaling"]["original_max_position_embeddings"] = 8192;
  config["rope_scaling"]["low_freq_factor"] = 4.0;
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument,
               "llama3 scaling needs low_freq_factor < high_freq_factor, found 4 and 4");
  config["rope_scaling"] = {{"factor", 2.0}};
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument,
               "key 'rope_scaling' has neither \"rope_type\" nor \"type\"");
  config["rope_scaling"] = "linear";
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument,
               "key 'rope_scaling': expected an object or null, found \"linear\"");
}

TEST(HfConfigTest, RefusesUnsupportedRopeScaling) {
  ScratchDir dir;
  json config = minimal_config();
  config["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  expect_error(load_config(dir, config), StatusCode::kUnimplemented,
               "'" + dir.file("config.json") +
                   "': rope_scaling type 'yarn' is not supported (supported: none, linear, llama3, longrope)");
  config["rope_scaling"] = {{"type", "dynamic"}, {"factor", 4.0}};
  expect_error(load_config(dir, config), StatusCode::kUnimplemented, "rope_scaling type 'dynamic' is not supported");
}

TEST(HfConfigTest, ReadsTransformers5RopeParameters) {
  ScratchDir dir;
  json config = minimal_config();
  config["rope_parameters"] = {{"rope_type", "linear"}, {"factor", 4.0}, {"rope_theta", 250000.0}};
  auto loaded = load_config(dir, config);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_DOUBLE_EQ(loaded->rope_theta, 250000.0);
  EXPECT_EQ(loaded->rope_scaling.type, RopeScaling::kLinear);
  EXPECT_DOUBLE_EQ(loaded->rope_scaling.factor, 4.0);
  config["rope_parameters"] = {{"rope_type", "yarn"}, {"rope_theta", 250000.0}};
  expect_error(load_config(dir, config), StatusCode::kUnimplemented, "rope_parameters type 'yarn' is not supported");
}

// Gemma-3-1B-it's config.json (transformers 4.50): no layer_types, the pattern says which slide.
constexpr std::string_view kGemma3Config = R"({
  "architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "attn_logit_softcapping": null, "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": [1, 106],
  "final_logit_softcapping": null, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152,
  "initializer_range": 0.02, "intermediate_size": 6912, "max_position_embeddings": 32768,
  "model_type": "gemma3_text", "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1,
  "pad_token_id": 0, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
  "rope_scaling": null, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6,
  "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "use_cache": true, "vocab_size": 262144
})";

// A Gemma3ForConditionalGeneration's (the 4B's shape): text_config holds only what differs from
// Gemma3TextConfig's defaults; the eos list and the dtype are at the top level.
constexpr std::string_view kGemma3MultimodalConfig = R"({
  "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999, "eoi_token_index": 256000,
  "eos_token_id": [1, 106], "image_token_index": 262144, "initializer_range": 0.02, "mm_tokens_per_image": 256,
  "model_type": "gemma3",
  "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                  "num_attention_heads": 8, "num_hidden_layers": 34, "num_key_value_heads": 4,
                  "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024},
  "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
  "vision_config": {"hidden_size": 1152, "image_size": 896, "model_type": "siglip_vision_model"}
})";

Result<HfConfig> load_with_family_defaults(const ScratchDir& dir, std::string_view config) {
  dir.write("config.json", std::string(config));
  return HfConfig::load(dir.path(), model_family_config_defaults);
}

TEST(HfConfigTest, Gemma3ReadsItsOwnKeys) {
  ScratchDir dir;
  auto config = load_with_family_defaults(dir, kGemma3Config);
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  EXPECT_EQ(config->hidden_activation, "gelu_pytorch_tanh");
  EXPECT_EQ(config->query_pre_attn_scalar, 256.0);
  EXPECT_EQ(config->rope_local_base_freq, 10000.0);
  EXPECT_EQ(config->sliding_window_pattern, 6);
  EXPECT_EQ(config->sliding_window, 512);
  EXPECT_TRUE(config->layer_types.empty());
  EXPECT_FALSE(config->attn_logit_softcapping.has_value());  // null: none
  EXPECT_FALSE(config->final_logit_softcapping.has_value());
  EXPECT_TRUE(config->tie_word_embeddings);  // not written: PretrainedConfig's default holds
  EXPECT_FALSE(config->from_text_config);
  EXPECT_EQ(config->eos_token_ids, (std::vector<int64_t>{1, 106}));
}

TEST(HfConfigTest, AMultimodalConfigIsReadFromItsTextConfigOverTheFamilyDefaults) {
  ScratchDir dir;
  auto config = load_with_family_defaults(dir, kGemma3MultimodalConfig);
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  EXPECT_TRUE(config->from_text_config);
  EXPECT_EQ(config->architectures, (std::vector<std::string>{"Gemma3ForConditionalGeneration"}));
  EXPECT_EQ(config->hidden_size, 2560);
  EXPECT_EQ(config->num_hidden_layers, 34);
  EXPECT_EQ(config->vocab_size, 262208);  // Gemma3TextConfig's default
  EXPECT_EQ(config->head_dim, 256);
  EXPECT_EQ(config->rope_theta, 1e6);
  EXPECT_EQ(config->rope_local_base_freq, 1e4);
  EXPECT_EQ(config->rope_scaling.type, RopeScaling::kLinear);
  EXPECT_EQ(config->rope_scaling.factor, 8.0);
  EXPECT_EQ(config->sliding_window, 1024);
  EXPECT_EQ(config->sliding_window_pattern, 6);
  EXPECT_EQ(config->eos_token_ids, (std::vector<int64_t>{1, 106}));  // the top level's
  EXPECT_EQ(config->bos_token_id, 2);
  EXPECT_EQ(config->torch_dtype, "bfloat16");

  // Without the family's defaults the sparse text_config lacks required keys, named in it.
  ScratchDir bare;
  bare.write("config.json", std::string(kGemma3MultimodalConfig));
  expect_error(HfConfig::load(bare.path()), StatusCode::kInvalidArgument,
               "missing required key 'text_config.vocab_size'");
  json bad = json::parse(kGemma3MultimodalConfig);
  bad["text_config"]["hidden_size"] = "big";
  expect_error(load_with_family_defaults(dir, bad.dump()), StatusCode::kInvalidArgument,
               "key 'text_config.hidden_size': expected a positive integer");
}

TEST(HfConfigTest, ReadsTransformers5RopeParametersByLayerType) {
  ScratchDir dir;
  json config = json::parse(kGemma3Config);
  config.erase("rope_theta");
  config.erase("rope_scaling");
  config.erase("rope_local_base_freq");
  config["rope_parameters"] = {{"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1e6}}},
                               {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}}}};
  auto loaded = load_with_family_defaults(dir, config.dump());
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->rope_theta, 1e6);
  EXPECT_EQ(loaded->rope_scaling.type, RopeScaling::kLinear);
  EXPECT_EQ(loaded->rope_local_base_freq, 1e4);
  config["rope_parameters"]["sliding_attention"] = {{"rope_type", "yarn"}, {"factor", 2.0}};
  expect_error(load_with_family_defaults(dir, config.dump()), StatusCode::kUnimplemented,
               "rope_parameters.sliding_attention type 'yarn' is not supported");
}

TEST(HfConfigTest, PartialRotaryFactorSetsTheRotaryWidth) {
  ScratchDir dir;
  json config = minimal_config();
  config["partial_rotary_factor"] = 0.5;
  auto half = load_config(dir, config);
  ASSERT_TRUE(half.ok()) << half.status().to_string();
  EXPECT_EQ(half->rope_params(64)->rotary_dim, 8);  // 16 x 0.5
  config["partial_rotary_factor"] = 0.4;            // 16 x 0.4 = 6.4 -> 6
  auto truncated = load_config(dir, config);
  ASSERT_TRUE(truncated.ok()) << truncated.status().to_string();
  EXPECT_EQ(truncated->rope_params(64)->rotary_dim, 6);
  config["partial_rotary_factor"] = 0.3;  // 4.8 -> 4
  EXPECT_EQ(load_config(dir, config)->rope_params(64)->rotary_dim, 4);
  config["partial_rotary_factor"] = 0.2;  // 3.2 -> 3: odd
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument,
               "head_dim 16 x partial_rotary_factor 0.2 gives a rotary width of 3, expected an even number >= 2");
  config["partial_rotary_factor"] = 1.5;
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument,
               "key 'partial_rotary_factor': expected a number in (0, 1], found 1.5");
}

TEST(HfConfigTest, RopeThetaMustExceedOne) {
  ScratchDir dir;
  json config = minimal_config();
  config["rope_theta"] = 0.5;
  expect_error(load_config(dir, config), StatusCode::kInvalidArgument,
               "key 'rope_theta': expected a finite number > 1, found 0.5");
}

TEST(HfConfigTest, NegativePadTokenReadsAsAbsent) {
  ScratchDir dir;
  json config = minimal_config();
  config["pad_token_id"] = -1;
  auto loaded = load_config(dir, config);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_FALSE(loaded->pad_token_id.has_value());
}

TEST(HfConfigTest, MissingOrMalformedFiles) {
  ScratchDir dir;
  auto missing = HfConfig::load(dir.path());
  expect_error(missing, StatusCode::kNotFound, "'" + dir.file("config.json") + "': no such file");

  dir.write("config.json", "{\"vocab_size\": ");
  expect_error(HfConfig::load(dir.path()), StatusCode::kInvalidArgument,
               "'" + dir.file("config.json") + "': not valid JSON");
  dir.write("config.json", "[]");
  expect_error(HfConfig::load(dir.path()), StatusCode::kInvalidArgument, "expected a JSON object at the top level");
  dir.write("config.json", R"({"vocab_size": 1, "vocab_size": 2})");
  expect_error(HfConfig::load(dir.path()), StatusCode::kInvalidArgument, "key 'vocab_size' appears twice");

  dir.write("generation_config.json", R"({"temperature": "hot"})");
  expect_error(
      load_config(dir, minimal_config()), StatusCode::kInvalidArgument,
      "'" + dir.file("generation_config.json") + "': key 'temperature': expected a number >= 0, found \"hot\"");
  dir.write("generation_config.json", R"({"top_p": 1.5})");
  expect_error(load_config(dir, minimal_config()), StatusCode::kInvalidArgument,
               "key 'top_p': expected a number in [0, 1], found 1.5");
  dir.write("generation_config.json", "not json");
  expect_error(load_config(dir, minimal_config()), StatusCode::kInvalidArgument,
               "'" + dir.file("generation_config.json") + "': not valid JSON");
}

}  // namespace
}  // namespace staticlm
