// SPDX-License-Identifier: Apache-2.0
// Qwen3ForCausalLM: the Llama graph with per-head RMSNorm on queries and keys (q_norm, k_norm)
// before RoPE (self_attention applies them where the weights have them), an explicit head_dim,
// optional attention biases, and Qwen2's sliding-window rule.
#include "staticlm/exporter/models/families.h"

namespace staticlm {

Result<DecoderModel> load_qwen3(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                                ConstantTable& constants, const FamilyOptions& options) {
  return load_llama_style(config, checkpoint, constants, options,
                          {.qkv_bias = config.attention_bias,
                           .o_bias = config.attention_bias,
                           .qk_norm = true,
                           .sliding_layers = layers_from_max_window_layers});
}

}  // namespace staticlm
