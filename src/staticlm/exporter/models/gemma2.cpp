// SPDX-License-Identifier: Apache-2.0
// Gemma2ForCausalLM: Gemma's blocks (gemma.cpp); even layers slide over `sliding_window` slots
// and odd ones attend globally (or as layer_types says), every layer with the same rope; attention
// scores scaled by query_pre_attn_scalar^-0.5 and tanh-capped by attn_logit_softcapping, the
// logits by final_logit_softcapping.
#include "staticlm/exporter/models/families.h"

namespace staticlm {

// Gemma2Config's defaults (transformers 4.42).
const std::string_view kGemma2ConfigDefaults = R"({
  "vocab_size": 256000, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
  "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
  "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 8192, "rms_norm_eps": 1e-6,
  "pad_token_id": 0, "eos_token_id": 1, "bos_token_id": 2, "tie_word_embeddings": true,
  "rope_theta": 10000.0, "attention_bias": false, "query_pre_attn_scalar": 256, "sliding_window": 4096,
  "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0
})";

// Gemma 2 alternates: layer 0 slides, layer 1 is global, and so on.
constexpr int64_t kGemma2Pattern = 2;

Result<DecoderModel> load_gemma2(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                                 ConstantTable& constants, const FamilyOptions& options) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<bool> sliding, gemma_sliding_layers(config, kGemma2Pattern));
  STATICLM_ASSIGN_OR_RETURN(RopeParams rope, config.rope_params(options.max_cache_len));
  std::vector<LayerAttention> attention;
  for (bool slides : sliding) {
    LayerAttention layer = gemma_scores(config);
    layer.rope = rope;
    layer.rope_attention_factor = config.rope_attention_factor();
    layer.window = slides ? config.sliding_window.value_or(0) : 0;
    attention.push_back(layer);
  }
  return load_gemma(config, checkpoint, constants, options, std::move(attention), /*qk_norm=*/false);
}

}  // namespace staticlm
