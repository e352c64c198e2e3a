// SPDX-License-Identifier: Apache-2.0
// LlamaForCausalLM: Llama 2 / 3.x, SmolLM, TinyLlama. attention_bias puts a bias on all four
// attention projections. The loader and the graph the other Llama-shaped families share.
#include "staticlm/exporter/decoder_builder.h"
#include "staticlm/exporter/models/families.h"
#include "staticlm/exporter/weight_mapper.h"

namespace staticlm {

std::vector<bool> every_layer(const HfConfig& config) {
  return std::vector<bool>(static_cast<size_t>(config.num_hidden_layers), true);
}

std::vector<bool> layers_from_max_window_layers(const HfConfig& config) {
  // 28: Qwen2Config's default, for a config read without the family's defaults.
  const int64_t first = config.max_window_layers.value_or(28);
  std::vector<bool> sliding;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    sliding.push_back(layer >= first);
  }
  return sliding;
}

Result<DecoderModel> read_llama_style(const HfConfig& config, const FamilyOptions& options,
                                      const LlamaStyleLayout& layout) {
  if (config.hidden_act != "silu") {
    return unimplemented("'", config.config_path, "': hidden_act '", config.hidden_act,
                         "' is not supported (supported: silu)");
  }
  DecoderModel model;
  STATICLM_ASSIGN_OR_RETURN(model.params, read_decoder_hyper_params(config, options));
  model.attention = uniform_attention(model.params);
  if (layout.sliding_layers != nullptr) {
    STATICLM_ASSIGN_OR_RETURN(std::vector<int64_t> windows, layer_windows(config, layout.sliding_layers(config)));
    for (size_t layer = 0; layer < model.attention.size(); ++layer) {
      model.attention[layer].window = windows[layer];
    }
  }
  return model;
}

Result<DecoderModel> load_llama_style(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                                      ConstantTable& constants, const FamilyOptions& options,
                                      const LlamaStyleLayout& layout) {
  STATICLM_ASSIGN_OR_RETURN(DecoderModel model, read_llama_style(config, options, layout));
  WeightMapper weights(checkpoint, constants, options.weight_dtype);
  STATICLM_RETURN_IF_ERROR(weights.llama_globals(config, model.weights));
  for (int64_t layer = 0; layer < model.params.num_layers; ++layer) {
    STATICLM_ASSIGN_OR_RETURN(DecoderLayerWeights w,
                              weights.llama_layer(layer, layout.qkv_bias, layout.o_bias, layout.qk_norm));
    model.weights.layers.push_back(w);
  }
  return model;
}

Result<DecoderModel> load_llama(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                                ConstantTable& constants, const FamilyOptions& options) {
  return load_llama_style(config, checkpoint, constants, options,
                          {.qkv_bias = config.attention_bias, .o_bias = config.attention_bias});
}

Result<std::unique_ptr<Graph>> build_llama_graph(const DecoderModel& model, std::shared_ptr<ConstantTable> constants,
                                                 const DecoderMethodShape& shape) {
  const DecoderHyperParams& p = model.params;
  STATICLM_ASSIGN_OR_RETURN(DecoderBuilder b, DecoderBuilder::start(model, std::move(constants), shape));
  const DecoderWeights& weights = model.weights;
  // Granite's multipliers, where the model has them.
  auto scaled = [&b](ValueId x, ConstantId factor, std::string_view role) -> Result<ValueId> {
    return factor == kNoConstant ? Result<ValueId>(x) : b.scale(x, factor, role);
  };
  STATICLM_ASSIGN_OR_RETURN(ValueId x, b.embed(weights.embed_tokens));
  STATICLM_ASSIGN_OR_RETURN(x, scaled(x, weights.embedding_scale, "embedding scale"));
  for (int64_t layer = 0; layer < p.num_layers; ++layer) {
    const DecoderLayerWeights& w = weights.layers[static_cast<size_t>(layer)];
    STATICLM_ASSIGN_OR_RETURN(ValueId h, b.rms_norm(x, w.input_norm, p.hidden_size, b.layer_role(layer, "input norm")));
    STATICLM_ASSIGN_OR_RETURN(ValueId attended,
                              b.self_attention(layer, h, w, model.attention[static_cast<size_t>(layer)]));
    if (b.narrows_after_attention(layer)) {
      STATICLM_ASSIGN_OR_RETURN(attended, b.last_row_of(attended));
      STATICLM_ASSIGN_OR_RETURN(x, b.last_row_of(x));
    }
    STATICLM_ASSIGN_OR_RETURN(ValueId projected, b.output_projection(layer, attended, w));
    STATICLM_ASSIGN_OR_RETURN(projected, scaled(projected, weights.residual_scale, "residual scale"));
    STATICLM_ASSIGN_OR_RETURN(x, b.add(x, projected));
    STATICLM_ASSIGN_OR_RETURN(
        h, b.rms_norm(x, w.post_attention_norm, p.hidden_size, b.layer_role(layer, "post-attention norm")));
    STATICLM_ASSIGN_OR_RETURN(ValueId mlp, b.gated_mlp(layer, h, w, Activation::kSilu));
    STATICLM_ASSIGN_OR_RETURN(mlp, scaled(mlp, weights.residual_scale, "residual scale"));
    STATICLM_ASSIGN_OR_RETURN(x, b.add(x, mlp));
  }
  STATICLM_ASSIGN_OR_RETURN(x, b.rms_norm(x, weights.final_norm, p.hidden_size, "final norm"));
  if (b.shape().hidden_states) {
    STATICLM_ASSIGN_OR_RETURN(x, scaled(x, weights.hidden_state_scale, "hidden state scale"));
    return b.finish_hidden_states(x);
  }
  STATICLM_ASSIGN_OR_RETURN(ValueId logits, b.lm_head(x, weights.lm_head));
  STATICLM_ASSIGN_OR_RETURN(logits, scaled(logits, weights.logits_scale, "logits scale"));
  return b.finish(logits);
}

}  // namespace staticlm
