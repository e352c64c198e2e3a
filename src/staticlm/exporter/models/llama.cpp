// LlamaForCausalLM: Llama 2 / 3.x, SmolLM, TinyLlama. attention_bias puts a bias on all four
// attention projections.
#include "staticlm/exporter/model_family.h"

namespace staticlm {

Result<DecoderModel> load_llama(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                                ConstantTable& constants, const FamilyOptions& options) {
  return load_llama_style(config, checkpoint, constants, options,
                          {.qkv_bias = config.attention_bias, .o_bias = config.attention_bias});
}

}  // namespace staticlm
