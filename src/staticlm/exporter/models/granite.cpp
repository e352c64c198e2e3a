// SPDX-License-Identifier: Apache-2.0
// GraniteForCausalLM (Granite 3): Llama's blocks and graph with four multipliers: the embeddings
// times embedding_multiplier, the scores times attention_multiplier (instead of 1 / sqrt(head_dim)),
// attention's and the MLP's outputs times residual_multiplier, the logits divided by logits_scaling.
// A logits_scaling that is a power of two (8 and 16 in the releases) is folded into the final
// norm's f32 weight, which is exact (the embeddings method multiplies it back out); the other multipliers are a mul by
// an f32 [1] constant, as transformers multiplies in the model's dtype.
#include "staticlm/exporter/models/families.h"
#include "staticlm/exporter/weight_mapper.h"

namespace staticlm {

// GraniteConfig's defaults (transformers 4.45).
const std::string_view kGraniteConfigDefaults = R"({
  "max_position_embeddings": 2048, "rms_norm_eps": 1e-6, "tie_word_embeddings": false,
  "embedding_multiplier": 1.0, "attention_multiplier": 1.0, "residual_multiplier": 1.0, "logits_scaling": 1.0
})";

namespace {

// `value` as an f32 [1] constant named `name`; kNoConstant where it is 1 (nothing to multiply).
Result<ConstantId> multiplier(WeightMapper& weights, const std::string& name, double value) {
  return value == 1.0 ? Result<ConstantId>(kNoConstant) : weights.scalar(name, static_cast<float>(value));
}

}  // namespace

Result<DecoderModel> load_granite(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                                  ConstantTable& constants, const FamilyOptions& options) {
  const LlamaStyleLayout layout{.qkv_bias = config.attention_bias, .o_bias = config.attention_bias};
  STATICLM_ASSIGN_OR_RETURN(DecoderModel model, read_llama_style(config, options, layout));
  for (LayerAttention& layer : model.attention) {
    layer.scale = config.attention_multiplier.value_or(1.0);
  }
  WeightMapper weights(checkpoint, constants, options.weight_dtype);
  DecoderWeights& w = model.weights;
  const double logits_scaling = config.logits_scaling.value_or(1.0);
  STATICLM_ASSIGN_OR_RETURN(w.embed_tokens, weights.require("model.embed_tokens.weight"));
  if (is_exact_scale(1.0 / logits_scaling)) {
    STATICLM_ASSIGN_OR_RETURN(w.final_norm,
                              weights.require_scaled("model.norm.weight", static_cast<float>(1.0 / logits_scaling)));
    STATICLM_ASSIGN_OR_RETURN(w.hidden_state_scale,
                              multiplier(weights, "model.norm.hidden_state_scale", logits_scaling));
  } else {
    STATICLM_ASSIGN_OR_RETURN(w.final_norm, weights.require("model.norm.weight"));
    STATICLM_ASSIGN_OR_RETURN(w.logits_scale, multiplier(weights, "model.logits_scaling", 1.0 / logits_scaling));
  }
  if (config.tie_word_embeddings) {
    w.lm_head = w.embed_tokens;
  } else {
    STATICLM_ASSIGN_OR_RETURN(w.lm_head, weights.require("lm_head.weight"));
  }
  STATICLM_ASSIGN_OR_RETURN(
      w.embedding_scale, multiplier(weights, "model.embedding_multiplier", config.embedding_multiplier.value_or(1.0)));
  STATICLM_ASSIGN_OR_RETURN(w.residual_scale,
                            multiplier(weights, "model.residual_multiplier", config.residual_multiplier.value_or(1.0)));
  for (int64_t layer = 0; layer < model.params.num_layers; ++layer) {
    STATICLM_ASSIGN_OR_RETURN(DecoderLayerWeights layer_weights,
                              weights.llama_layer(layer, layout.qkv_bias, layout.o_bias, /*qk_norm=*/false));
    w.layers.push_back(layer_weights);
  }
  return model;
}

}  // namespace staticlm
