// LlamaForCausalLM: Llama 2 / 3.x, SmolLM, TinyLlama. attention_bias puts a bias on all four
// attention projections.
#include "staticlm/exporter/model_family.h"

namespace staticlm {

Result<DecoderModel> load_llama(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                                ConstantTable& constants, const FamilyOptions& options) {
  DecoderModel model;
  STATICLM_ASSIGN_OR_RETURN(model.params, read_decoder_hyper_params(config));
  WeightMapper weights(checkpoint, constants, options.weight_dtype);
  STATICLM_RETURN_IF_ERROR(weights.llama_globals(config, model.weights));
  for (int64_t layer = 0; layer < model.params.num_layers; ++layer) {
    STATICLM_ASSIGN_OR_RETURN(DecoderLayerWeights w,
                              weights.llama_layer(layer, config.attention_bias, config.attention_bias, false));
    model.weights.layers.push_back(w);
  }
  return model;
}

}  // namespace staticlm
