// SPDX-License-Identifier: Apache-2.0
// Gemma3ForCausalLM (model_type gemma3_text) and the language model of a
// Gemma3ForConditionalGeneration (its text_config; the vision tower is not exported): Gemma's
// blocks (gemma.cpp) with per-head q_norm / k_norm. Five layers in six slide over
// `sliding_window` slots (sliding_window_pattern, or as layer_types says) and rotate with their own
// base, rope_local_base_freq, unscaled; the global ones rotate with rope_theta and rope_scaling.
#include "staticlm/exporter/models/families.h"

namespace staticlm {

// Gemma3TextConfig's defaults (transformers 4.50 to 4.55).
const std::string_view kGemma3TextConfigDefaults = R"({
  "vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
  "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
  "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 131072, "rms_norm_eps": 1e-6,
  "pad_token_id": 0, "eos_token_id": 1, "bos_token_id": 2, "tie_word_embeddings": true,
  "rope_theta": 1000000.0, "attention_bias": false, "query_pre_attn_scalar": 256, "sliding_window": 4096,
  "rope_local_base_freq": 10000.0, "sliding_window_pattern": 6
})";

Result<DecoderModel> load_gemma3(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                                 ConstantTable& constants, const FamilyOptions& options) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<bool> sliding,
                            gemma_sliding_layers(config, config.sliding_window_pattern.value_or(6)));
  STATICLM_ASSIGN_OR_RETURN(RopeParams global_rope, config.rope_params(options.max_cache_len));
  RopeParams local_rope;
  local_rope.theta = config.rope_local_base_freq.value_or(10000.0);
  local_rope.rotary_dim = global_rope.rotary_dim;
  std::vector<LayerAttention> attention;
  for (bool slides : sliding) {
    LayerAttention layer = gemma_scores(config);
    layer.rope = slides ? local_rope : global_rope;
    layer.rope_attention_factor = slides ? 1.0 : config.rope_attention_factor();
    layer.window = slides ? config.sliding_window.value_or(0) : 0;
    attention.push_back(layer);
  }
  return load_gemma(config, checkpoint, constants, options, std::move(attention), /*qk_norm=*/true);
}

}  // namespace staticlm
