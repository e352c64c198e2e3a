// SPDX-License-Identifier: Apache-2.0
// Qwen2ForCausalLM (Qwen2, Qwen2.5): biases on q/k/v but not on o; a sliding window that is
// configured but only used when use_sliding_window is set.
#include "staticlm/exporter/models/families.h"

namespace staticlm {

Result<DecoderModel> load_qwen2(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                                ConstantTable& constants, const FamilyOptions& options) {
  return load_llama_style(config, checkpoint, constants, options, {.qkv_bias = true, .sliding_window = true});
}

}  // namespace staticlm
