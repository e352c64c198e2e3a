// SPDX-License-Identifier: Apache-2.0
// SmolLM3ForCausalLM: Llama's blocks and graph, the layers no_rope_layers marks 0 attending
// without rope (every no_rope_layer_interval-th layer where the config has no list); with
// use_sliding_window, those layers (or the ones layer_types marks) slide over sliding_window.
#include "staticlm/exporter/models/families.h"

namespace staticlm {

// SmolLM3Config's defaults (transformers 4.53).
const std::string_view kSmolLM3ConfigDefaults = R"({
  "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 2000000.0, "tie_word_embeddings": true,
  "use_sliding_window": false, "no_rope_layer_interval": 4
})";

namespace {

// Whether each layer rotates: no_rope_layers, else all but every no_rope_layer_interval-th.
std::vector<bool> layers_with_rope(const HfConfig& config) {
  std::vector<bool> rotates;
  const int64_t interval = config.no_rope_layer_interval.value_or(4);
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    rotates.push_back(config.no_rope_layers.empty() ? (layer + 1) % interval != 0
                                                    : config.no_rope_layers[static_cast<size_t>(layer)] != 0);
  }
  return rotates;
}

// SmolLM3Config's layer_types where the config has none: the layers without rope slide.
std::vector<bool> layers_without_rope(const HfConfig& config) {
  std::vector<bool> sliding = layers_with_rope(config);
  sliding.flip();
  return sliding;
}

}  // namespace

Result<DecoderModel> load_smollm3(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                                  ConstantTable& constants, const FamilyOptions& options) {
  STATICLM_ASSIGN_OR_RETURN(DecoderModel model, load_llama_style(config, checkpoint, constants, options,
                                                                 {.qkv_bias = config.attention_bias,
                                                                  .o_bias = config.attention_bias,
                                                                  .sliding_layers = layers_without_rope}));
  const std::vector<bool> rotates = layers_with_rope(config);
  for (size_t layer = 0; layer < model.attention.size(); ++layer) {
    if (!rotates[layer]) {
      model.attention[layer].rope.reset();
    }
  }
  return model;
}

}  // namespace staticlm
