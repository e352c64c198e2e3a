// SPDX-License-Identifier: Apache-2.0
// Hugging Face model configuration: config.json plus the optional generation_config.json, read
// into typed, validated fields. Model builders read these fields; nothing here knows a model.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/ops/rope.h"

namespace staticlm {

// rope_scaling as config.json states it. "default" (and null or absent) reads as kNone; Phi-3's
// old name "su" reads as kLongrope.
struct HfRopeScaling {
  RopeScaling type = RopeScaling::kNone;
  double factor = 1.0;                           // linear and llama3; longrope where it has one
  double low_freq_factor = 1.0;                  // llama3 only
  double high_freq_factor = 4.0;                 // llama3 only
  int64_t original_max_position_embeddings = 0;  // llama3; longrope where it has one (transformers 5)
  std::vector<double> short_factor;              // longrope: one per rotated channel pair
  std::vector<double> long_factor;               // longrope
  std::optional<double> attention_factor;        // longrope: absent, transformers' default
};

// Sampling defaults from generation_config.json; each is empty when the file does not set it.
struct HfGenerationDefaults {
  std::optional<bool> do_sample;
  std::optional<double> temperature;         // >= 0
  std::optional<int64_t> top_k;              // >= 0
  std::optional<double> top_p;               // in [0, 1]
  std::optional<double> min_p;               // in [0, 1]
  std::optional<double> repetition_penalty;  // > 0
};

// The JSON object of defaults a model family's config class gives the keys its config.json may
// leave out (transformers writes a multimodal checkpoint's text_config with only the values that
// differ from its class's), for a config whose `architectures` these are; empty: none.
using HfConfigDefaults = std::string_view (*)(std::span<const std::string> architectures);

// The two kinds of layer `layer_types` names (Gemma 2 / 3, and transformers >= 4.53 elsewhere).
inline constexpr std::string_view kSlidingAttention = "sliding_attention";
inline constexpr std::string_view kFullAttention = "full_attention";

struct HfConfig {
  std::string model_dir;
  std::string config_path;  // model_dir/config.json, for messages
  bool has_generation_config = false;

  std::vector<std::string> architectures;  // non-empty, e.g. {"LlamaForCausalLM"}
  std::string model_type;                  // empty when config.json has none
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // divides num_attention_heads
  int64_t head_dim = 0;             // explicit, or hidden_size / num_attention_heads
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  HfRopeScaling rope_scaling;
  double partial_rotary_factor = 1.0;  // in (0, 1]
  bool tie_word_embeddings = false;
  bool attention_bias = false;
  bool mlp_bias = false;
  int64_t max_position_embeddings = 2048;
  // Phi-3: the pretraining length, up to which longrope uses its short factors.
  std::optional<int64_t> original_max_position_embeddings;
  std::optional<int64_t> sliding_window;     // null reads as absent
  std::optional<bool> use_sliding_window;    // Qwen2 sets a window it does not use
  std::optional<int64_t> max_window_layers;  // Qwen2 / Qwen3: without layer_types, layers from it on slide
  std::string hidden_act = "silu";
  std::optional<std::string> hidden_activation;  // Gemma's name for the MLP's activation

  // Gemma 2 / 3.
  std::optional<double> query_pre_attn_scalar;    // > 0: the scores scale is its inverse square root
  std::optional<double> attn_logit_softcapping;   // > 0; absent or null: none
  std::optional<double> final_logit_softcapping;  // > 0; absent or null: none
  std::optional<double> rope_local_base_freq;     // > 1: the rope base of sliding layers (Gemma 3)
  std::vector<std::string> layer_types;           // one per layer when present
  std::optional<int64_t> sliding_window_pattern;  // sliding_window_pattern or _sliding_window_pattern
  bool use_bidirectional_attention = false;

  // SmolLM3: one entry per layer (at least), 1 where the layer rotates, 0 where it has no rope;
  // empty when absent. no_rope_layer_interval fills it where it is absent (every n-th layer none).
  std::vector<int64_t> no_rope_layers;
  std::optional<int64_t> no_rope_layer_interval;

  // Granite: each > 0 where present.
  std::optional<double> embedding_multiplier;  // the embeddings times it
  std::optional<double> attention_multiplier;  // the scores scale, replacing 1 / sqrt(head_dim)
  std::optional<double> residual_multiplier;   // attention's and the MLP's outputs times it
  std::optional<double> logits_scaling;        // the logits divided by it
  // The model's keys came from config.json's text_config (a multimodal checkpoint such as
  // Gemma3ForConditionalGeneration).
  bool from_text_config = false;
  std::optional<int64_t> bos_token_id;
  std::optional<int64_t> pad_token_id;  // a negative id (old conversions write -1) reads as absent
  // config.json's eos ids, then generation_config.json's that are new: every id that ends generation.
  std::vector<int64_t> eos_token_ids;
  std::optional<std::string> torch_dtype;  // "bfloat16", "float16", "float32", ...
  HfGenerationDefaults generation;

  // Reads model_dir/config.json (required) and model_dir/generation_config.json (optional).
  // generation_config.json's bos_token_id and pad_token_id win over config.json's; eos ids merge.
  // The rope settings of transformers >= 5 ("rope_parameters", flat or by layer type) are read
  // when "rope_scaling" and "rope_theta" are absent. A config with a "text_config" object is read
  // from it, the top level's token ids and dtype filling what it lacks; `defaults` (given the
  // architectures) fills keys neither has. Unknown keys are ignored (configs carry many a builder
  // does not need).
  // Fails with NotFound when config.json is missing; InvalidArgument naming the file and key when
  // a file is not a JSON object, a required key is missing, or a value has the wrong type or range
  // (including num_key_value_heads not dividing num_attention_heads, hidden_size not divisible by
  // num_attention_heads without head_dim, or a rotary width that is not even); Unimplemented for a
  // rope_scaling type other than none, default, linear, llama3 and longrope (or su).
  static Result<HfConfig> load(const std::string& model_dir, HfConfigDefaults defaults = nullptr);

  // The rope parameters the model's rope ops take: theta, rotary_dim = head_dim x
  // partial_rotary_factor, and the scaling. longrope rotates with the long factors when
  // `max_sequence_len` (the exported cache's length) is beyond rope_original_max_position(), as
  // transformers does for a sequence that long, else with the short ones. Fails with
  // InvalidArgument naming config.json when the fields are out of range (load() has already
  // checked this for a loaded config).
  Result<RopeParams> rope_params(int64_t max_sequence_len) const;
  // longrope: the length up to which the short factors apply: original_max_position_embeddings,
  // else rope_scaling's, else max_position_embeddings (as transformers reads it). 0 otherwise.
  int64_t rope_original_max_position() const;
  // longrope: what the rotated channels of q and k are multiplied by (cos and sin in
  // transformers): rope_scaling's attention_factor, else sqrt(1 + ln(s) / ln(original)) with
  // s = max_position_embeddings / original where s > 1. 1 for the other scalings.
  double rope_attention_factor() const;

  // The attention window the model really uses: sliding_window unless use_sliding_window is false.
  std::optional<int64_t> effective_sliding_window() const;
};

}  // namespace staticlm
