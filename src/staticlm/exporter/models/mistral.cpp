// SPDX-License-Identifier: Apache-2.0
// MistralForCausalLM: the Llama graph, with a sliding attention window that hf_static v1 can
// only honour when the cache is no longer than the window.
#include "staticlm/exporter/models/families.h"

namespace staticlm {

Result<DecoderModel> load_mistral(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                                  ConstantTable& constants, const FamilyOptions& options) {
  return load_llama_style(config, checkpoint, constants, options, {.sliding_window = true});
}

}  // namespace staticlm
