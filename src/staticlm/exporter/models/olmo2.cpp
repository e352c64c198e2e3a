// SPDX-License-Identifier: Apache-2.0
// Olmo2ForCausalLM (OLMo 2): no norm before attention or the MLP; each output is normed before it
// joins the residual stream (post_attention_layernorm, post_feedforward_layernorm), and q_norm /
// k_norm normalize the whole q and k projections (heads x head_dim channels) before rope.
#include "staticlm/exporter/decoder_builder.h"
#include "staticlm/exporter/models/families.h"
#include "staticlm/exporter/weight_mapper.h"

namespace staticlm {

// Olmo2Config's defaults (transformers 4.47).
const std::string_view kOlmo2ConfigDefaults = R"({
  "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": false
})";

Result<DecoderModel> load_olmo2(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                                ConstantTable& constants, const FamilyOptions& options) {
  STATICLM_ASSIGN_OR_RETURN(DecoderModel model, read_llama_style(config, options, {}));
  WeightMapper weights(checkpoint, constants, options.weight_dtype);
  STATICLM_RETURN_IF_ERROR(weights.llama_globals(config, model.weights));
  for (int64_t layer = 0; layer < model.params.num_layers; ++layer) {
    const std::string p = str_cat("model.layers.", layer, ".");
    DecoderLayerWeights w;
    STATICLM_ASSIGN_OR_RETURN(w.q_proj, weights.require(p + "self_attn.q_proj.weight"));
    STATICLM_ASSIGN_OR_RETURN(w.k_proj, weights.require(p + "self_attn.k_proj.weight"));
    STATICLM_ASSIGN_OR_RETURN(w.v_proj, weights.require(p + "self_attn.v_proj.weight"));
    STATICLM_ASSIGN_OR_RETURN(w.o_proj, weights.require(p + "self_attn.o_proj.weight"));
    if (config.attention_bias) {
      STATICLM_ASSIGN_OR_RETURN(w.q_bias, weights.require(p + "self_attn.q_proj.bias"));
      STATICLM_ASSIGN_OR_RETURN(w.k_bias, weights.require(p + "self_attn.k_proj.bias"));
      STATICLM_ASSIGN_OR_RETURN(w.v_bias, weights.require(p + "self_attn.v_proj.bias"));
      STATICLM_ASSIGN_OR_RETURN(w.o_bias, weights.require(p + "self_attn.o_proj.bias"));
    }
    STATICLM_ASSIGN_OR_RETURN(w.q_norm, weights.require(p + "self_attn.q_norm.weight"));
    STATICLM_ASSIGN_OR_RETURN(w.k_norm, weights.require(p + "self_attn.k_norm.weight"));
    w.qk_norm_scope = QkNormScope::kWholeProjection;
    STATICLM_ASSIGN_OR_RETURN(w.post_attention_norm, weights.require(p + "post_attention_layernorm.weight"));
    STATICLM_ASSIGN_OR_RETURN(w.post_feedforward_norm, weights.require(p + "post_feedforward_layernorm.weight"));
    STATICLM_ASSIGN_OR_RETURN(w.gate_proj, weights.require(p + "mlp.gate_proj.weight"));
    STATICLM_ASSIGN_OR_RETURN(w.up_proj, weights.require(p + "mlp.up_proj.weight"));
    STATICLM_ASSIGN_OR_RETURN(w.down_proj, weights.require(p + "mlp.down_proj.weight"));
    model.weights.layers.push_back(w);
  }
  return model;
}

Result<std::unique_ptr<Graph>> build_olmo2_graph(const DecoderModel& model, std::shared_ptr<ConstantTable> constants,
                                                 const DecoderMethodShape& shape) {
  const DecoderHyperParams& p = model.params;
  STATICLM_ASSIGN_OR_RETURN(DecoderBuilder b, DecoderBuilder::start(model, std::move(constants), shape));
  STATICLM_ASSIGN_OR_RETURN(ValueId x, b.embed(model.weights.embed_tokens));
  for (int64_t layer = 0; layer < p.num_layers; ++layer) {
    const DecoderLayerWeights& w = model.weights.layers[static_cast<size_t>(layer)];
    STATICLM_ASSIGN_OR_RETURN(ValueId h, b.self_attention(layer, x, w, model.attention[static_cast<size_t>(layer)]));
    if (b.narrows_after_attention(layer)) {
      STATICLM_ASSIGN_OR_RETURN(h, b.last_row_of(h));
      STATICLM_ASSIGN_OR_RETURN(x, b.last_row_of(x));
    }
    STATICLM_ASSIGN_OR_RETURN(h, b.output_projection(layer, h, w));
    STATICLM_ASSIGN_OR_RETURN(
        h, b.rms_norm(h, w.post_attention_norm, p.hidden_size, b.layer_role(layer, "post-attention norm")));
    STATICLM_ASSIGN_OR_RETURN(x, b.add(x, h));
    STATICLM_ASSIGN_OR_RETURN(h, b.gated_mlp(layer, x, w, Activation::kSilu));
    STATICLM_ASSIGN_OR_RETURN(
        h, b.rms_norm(h, w.post_feedforward_norm, p.hidden_size, b.layer_role(layer, "post-feedforward norm")));
    STATICLM_ASSIGN_OR_RETURN(x, b.add(x, h));
  }
  STATICLM_ASSIGN_OR_RETURN(x, b.rms_norm(x, model.weights.final_norm, p.hidden_size, "final norm"));
  if (b.shape().hidden_states) {
    return b.finish_hidden_states(x);
  }
  STATICLM_ASSIGN_OR_RETURN(ValueId logits, b.lm_head(x, model.weights.lm_head));
  return b.finish(logits);
}

}  // namespace staticlm
