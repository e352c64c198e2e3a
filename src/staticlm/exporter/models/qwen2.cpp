// Qwen2ForCausalLM (Qwen2, Qwen2.5): biases on q/k/v but not on o; a sliding window that is
// configured but only used when use_sliding_window is set.
#include "staticlm/exporter/model_family.h"

namespace staticlm {

Result<DecoderModel> load_qwen2(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                                ConstantTable& constants, const FamilyOptions& options) {
  STATICLM_RETURN_IF_ERROR(check_sliding_window(config, options.max_cache_len));
  DecoderModel model;
  STATICLM_ASSIGN_OR_RETURN(model.params, read_decoder_hyper_params(config));
  WeightMapper weights(checkpoint, constants, options.weight_dtype);
  STATICLM_RETURN_IF_ERROR(weights.llama_globals(config, model.weights));
  for (int64_t layer = 0; layer < model.params.num_layers; ++layer) {
    STATICLM_ASSIGN_OR_RETURN(DecoderLayerWeights w, weights.llama_layer(layer, true, false, false));
    model.weights.layers.push_back(w);
  }
  return model;
}

}  // namespace staticlm
