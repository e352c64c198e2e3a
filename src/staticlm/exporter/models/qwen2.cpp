// SPDX-License-Identifier: Apache-2.0
// Qwen2ForCausalLM (Qwen2, Qwen2.5): biases on q/k/v but not on o; a sliding window that is
// configured but only used when use_sliding_window is set, on the layers layer_types marks or, in
// older configs, those from max_window_layers on.
#include "staticlm/exporter/models/families.h"

namespace staticlm {

// Qwen2Config's defaults (and Qwen3Config's) for the window keys: unused unless switched on.
const std::string_view kQwen2ConfigDefaults = R"({
  "use_sliding_window": false, "sliding_window": 4096, "max_window_layers": 28
})";

Result<DecoderModel> load_qwen2(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                                ConstantTable& constants, const FamilyOptions& options) {
  return load_llama_style(config, checkpoint, constants, options,
                          {.qkv_bias = true, .sliding_layers = layers_from_max_window_layers});
}

}  // namespace staticlm
