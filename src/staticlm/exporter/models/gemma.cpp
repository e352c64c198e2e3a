// SPDX-License-Identifier: Apache-2.0
// What Gemma 2 and Gemma 3 share: the loader and the graph. gemma2.cpp and gemma3.cpp say how
// their layers attend.
#include <cmath>

#include "staticlm/core/half.h"
#include "staticlm/exporter/decoder_builder.h"
#include "staticlm/exporter/models/families.h"
#include "staticlm/exporter/weight_mapper.h"
#include "staticlm/ops/op_set.h"

namespace staticlm {
namespace {

// Gemma's RMSNorm multiplies by (1 + w).
constexpr float kNormOffset = 1.0f;

Result<Activation> gemma_activation(const HfConfig& config) {
  const std::string name = config.hidden_activation.value_or(config.hidden_act);
  if (name == "gelu_pytorch_tanh") {
    return Activation::kGeluTanh;
  }
  if (name == "gelu") {
    return Activation::kGelu;
  }
  return unimplemented("'", config.config_path, "': hidden_activation '", name,
                       "' is not supported (supported: gelu_pytorch_tanh, gelu)");
}

// Gemma3TextScaledWordEmbedding multiplies by sqrt(hidden_size) as an f32 tensor cast to the
// model's dtype: bf16 turns sqrt(3072) = 55.43 into 55.5.
float embedding_scale(const HfConfig& config) {
  const auto scale = static_cast<float>(std::sqrt(static_cast<double>(config.hidden_size)));
  const std::string dtype = config.torch_dtype.value_or("float32");
  if (dtype == "bfloat16") {
    return bf16_to_f32(f32_to_bf16(scale));
  }
  if (dtype == "float16") {
    return f16_to_f32(f32_to_f16(scale));
  }
  return scale;
}

// Where the language model's tensors are: "model." in Gemma2ForCausalLM / Gemma3ForCausalLM, under
// the language model in a Gemma3ForConditionalGeneration (as transformers 4.50 and >= 4.52 save it).
Result<std::string> language_model_prefix(const HfConfig& config, const SafetensorsCheckpoint& checkpoint) {
  for (const char* prefix : {"model.", "language_model.model.", "model.language_model."}) {
    if (checkpoint.find(str_cat(prefix, "embed_tokens.weight")) != nullptr) {
      return std::string(prefix);
    }
  }
  return not_found("'", config.model_dir,
                   "': no embed_tokens.weight under model., language_model.model. or model.language_model.");
}

Result<DecoderLayerWeights> gemma_layer(WeightMapper& weights, const std::string& p, bool biases, bool qk_norm) {
  DecoderLayerWeights w;
  STATICLM_ASSIGN_OR_RETURN(w.input_norm, weights.require_shifted(p + "input_layernorm.weight", kNormOffset));
  STATICLM_ASSIGN_OR_RETURN(w.q_proj, weights.require(p + "self_attn.q_proj.weight"));
  STATICLM_ASSIGN_OR_RETURN(w.k_proj, weights.require(p + "self_attn.k_proj.weight"));
  STATICLM_ASSIGN_OR_RETURN(w.v_proj, weights.require(p + "self_attn.v_proj.weight"));
  STATICLM_ASSIGN_OR_RETURN(w.o_proj, weights.require(p + "self_attn.o_proj.weight"));
  if (biases) {
    STATICLM_ASSIGN_OR_RETURN(w.q_bias, weights.require(p + "self_attn.q_proj.bias"));
    STATICLM_ASSIGN_OR_RETURN(w.k_bias, weights.require(p + "self_attn.k_proj.bias"));
    STATICLM_ASSIGN_OR_RETURN(w.v_bias, weights.require(p + "self_attn.v_proj.bias"));
    STATICLM_ASSIGN_OR_RETURN(w.o_bias, weights.require(p + "self_attn.o_proj.bias"));
  }
  if (qk_norm) {
    STATICLM_ASSIGN_OR_RETURN(w.q_norm, weights.require_shifted(p + "self_attn.q_norm.weight", kNormOffset));
    STATICLM_ASSIGN_OR_RETURN(w.k_norm, weights.require_shifted(p + "self_attn.k_norm.weight", kNormOffset));
  }
  STATICLM_ASSIGN_OR_RETURN(w.post_attention_norm,
                            weights.require_shifted(p + "post_attention_layernorm.weight", kNormOffset));
  STATICLM_ASSIGN_OR_RETURN(w.pre_feedforward_norm,
                            weights.require_shifted(p + "pre_feedforward_layernorm.weight", kNormOffset));
  STATICLM_ASSIGN_OR_RETURN(w.post_feedforward_norm,
                            weights.require_shifted(p + "post_feedforward_layernorm.weight", kNormOffset));
  STATICLM_ASSIGN_OR_RETURN(w.gate_proj, weights.require(p + "mlp.gate_proj.weight"));
  STATICLM_ASSIGN_OR_RETURN(w.up_proj, weights.require(p + "mlp.up_proj.weight"));
  STATICLM_ASSIGN_OR_RETURN(w.down_proj, weights.require(p + "mlp.down_proj.weight"));
  return w;
}

}  // namespace

LayerAttention gemma_scores(const HfConfig& config) {
  LayerAttention attention;
  attention.scale = config.query_pre_attn_scalar ? 1.0 / std::sqrt(*config.query_pre_attn_scalar)
                                                 : attention_default_scale(config.head_dim);
  attention.softcap = config.attn_logit_softcapping.value_or(0.0);
  return attention;
}

Result<std::vector<bool>> gemma_sliding_layers(const HfConfig& config, int64_t pattern) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<bool> sliding, sliding_layer_types(config));
  if (!sliding.empty()) {
    return sliding;
  }
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    sliding.push_back((layer + 1) % pattern != 0);
  }
  return sliding;
}

Result<DecoderModel> load_gemma(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                                ConstantTable& constants, const FamilyOptions& options,
                                std::vector<LayerAttention> attention, bool qk_norm) {
  if (config.use_bidirectional_attention) {
    return unimplemented("'", config.config_path,
                         "': use_bidirectional_attention = true is not supported (supported: false, causal "
                         "attention)");
  }
  DecoderModel model;
  STATICLM_ASSIGN_OR_RETURN(model.activation, gemma_activation(config));
  STATICLM_ASSIGN_OR_RETURN(model.params, read_decoder_hyper_params(config, options));
  model.attention = std::move(attention);
  model.final_softcap = config.final_logit_softcapping.value_or(0.0);
  STATICLM_ASSIGN_OR_RETURN(const std::string prefix, language_model_prefix(config, checkpoint));
  WeightMapper weights(checkpoint, constants, options.weight_dtype);
  DecoderWeights& w = model.weights;
  STATICLM_ASSIGN_OR_RETURN(w.embed_tokens, weights.require(prefix + "embed_tokens.weight"));
  STATICLM_ASSIGN_OR_RETURN(w.embedding_scale,
                            weights.scalar(prefix + "embed_tokens.embed_scale", embedding_scale(config)));
  STATICLM_ASSIGN_OR_RETURN(w.final_norm, weights.require_shifted(prefix + "norm.weight", kNormOffset));
  if (config.tie_word_embeddings) {
    w.lm_head = w.embed_tokens;
  } else {
    STATICLM_ASSIGN_OR_RETURN(w.lm_head, weights.require("lm_head.weight"));
  }
  for (int64_t layer = 0; layer < model.params.num_layers; ++layer) {
    STATICLM_ASSIGN_OR_RETURN(
        DecoderLayerWeights layer_weights,
        gemma_layer(weights, str_cat(prefix, "layers.", layer, "."), config.attention_bias, qk_norm));
    w.layers.push_back(layer_weights);
  }
  return model;
}

Result<std::unique_ptr<Graph>> build_gemma_graph(const DecoderModel& model, std::shared_ptr<ConstantTable> constants,
                                                 const DecoderMethodShape& shape) {
  const DecoderHyperParams& p = model.params;
  STATICLM_ASSIGN_OR_RETURN(DecoderBuilder b, DecoderBuilder::start(model, std::move(constants), shape));
  STATICLM_ASSIGN_OR_RETURN(ValueId x, b.embed(model.weights.embed_tokens));
  STATICLM_ASSIGN_OR_RETURN(x, b.scale(x, model.weights.embedding_scale, "embedding scale"));
  for (int64_t layer = 0; layer < p.num_layers; ++layer) {
    const DecoderLayerWeights& w = model.weights.layers[static_cast<size_t>(layer)];
    STATICLM_ASSIGN_OR_RETURN(ValueId h, b.rms_norm(x, w.input_norm, p.hidden_size, b.layer_role(layer, "input norm")));
    STATICLM_ASSIGN_OR_RETURN(ValueId attended,
                              b.self_attention(layer, h, w, model.attention[static_cast<size_t>(layer)]));
    if (b.narrows_after_attention(layer)) {
      STATICLM_ASSIGN_OR_RETURN(attended, b.last_row_of(attended));
      STATICLM_ASSIGN_OR_RETURN(x, b.last_row_of(x));
    }
    STATICLM_ASSIGN_OR_RETURN(h, b.output_projection(layer, attended, w));
    STATICLM_ASSIGN_OR_RETURN(
        h, b.rms_norm(h, w.post_attention_norm, p.hidden_size, b.layer_role(layer, "post-attention norm")));
    STATICLM_ASSIGN_OR_RETURN(x, b.add(x, h));
    STATICLM_ASSIGN_OR_RETURN(
        h, b.rms_norm(x, w.pre_feedforward_norm, p.hidden_size, b.layer_role(layer, "pre-feedforward norm")));
    STATICLM_ASSIGN_OR_RETURN(h, b.gated_mlp(layer, h, w, model.activation));
    STATICLM_ASSIGN_OR_RETURN(
        h, b.rms_norm(h, w.post_feedforward_norm, p.hidden_size, b.layer_role(layer, "post-feedforward norm")));
    STATICLM_ASSIGN_OR_RETURN(x, b.add(x, h));
  }
  STATICLM_ASSIGN_OR_RETURN(x, b.rms_norm(x, model.weights.final_norm, p.hidden_size, "final norm"));
  if (b.shape().hidden_states) {
    return b.finish_hidden_states(x);
  }
  STATICLM_ASSIGN_OR_RETURN(ValueId logits, b.lm_head(x, model.weights.lm_head));
  if (model.final_softcap > 0.0) {
    STATICLM_ASSIGN_OR_RETURN(logits, b.softcap(logits, model.final_softcap));
  }
  return b.finish(logits);
}

}  // namespace staticlm
