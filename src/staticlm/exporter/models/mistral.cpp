// SPDX-License-Identifier: Apache-2.0
// MistralForCausalLM: the Llama graph, every layer attending over the last `sliding_window`
// positions (windowed_attention where the window is shorter than the cache).
#include "staticlm/exporter/models/families.h"

namespace staticlm {

// MistralConfig's default window, for a config.json that leaves the key out (null: none).
const std::string_view kMistralConfigDefaults = R"({"sliding_window": 4096})";

Result<DecoderModel> load_mistral(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                                  ConstantTable& constants, const FamilyOptions& options) {
  return load_llama_style(config, checkpoint, constants, options, {.sliding_layers = every_layer});
}

}  // namespace staticlm
