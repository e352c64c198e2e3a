// SPDX-License-Identifier: Apache-2.0
#include "staticlm/exporter/model_family.h"

#include <array>

#include "staticlm/exporter/models/families.h"
#include "staticlm/ops/op_set.h"

namespace staticlm {
namespace {

const std::array<ModelFamily, 7> kFamilies = {{
    {"LlamaForCausalLM", {}, load_llama, build_llama_graph},
    {"Qwen2ForCausalLM", {}, load_qwen2, build_llama_graph},
    {"MistralForCausalLM", {}, load_mistral, build_llama_graph},
    {"Qwen3ForCausalLM", {}, load_qwen3, build_llama_graph},
    {"Gemma2ForCausalLM", kGemma2ConfigDefaults, load_gemma2, build_gemma_graph},
    {"Gemma3ForCausalLM", kGemma3TextConfigDefaults, load_gemma3, build_gemma_graph},
    {"Gemma3ForConditionalGeneration", kGemma3TextConfigDefaults, load_gemma3, build_gemma_graph},
}};

const ModelFamily* family_of(std::span<const std::string> architectures) {
  for (const std::string& architecture : architectures) {
    for (const ModelFamily& family : kFamilies) {
      if (family.architecture == architecture) {
        return &family;
      }
    }
  }
  return nullptr;
}

}  // namespace

std::span<const ModelFamily> model_families() {
  return kFamilies;
}

std::string_view model_family_config_defaults(std::span<const std::string> architectures) {
  const ModelFamily* family = family_of(architectures);
  return family != nullptr ? family->config_defaults : std::string_view();
}

Result<const ModelFamily*> find_model_family(const HfConfig& config) {
  if (const ModelFamily* family = family_of(config.architectures)) {
    return family;
  }
  std::vector<std::string> supported;
  for (const ModelFamily& family : kFamilies) {
    supported.emplace_back(family.architecture);
  }
  return unimplemented("'", config.config_path, "': architecture ", join(config.architectures, ", "),
                       " is not supported (supported: ", join(supported, ", "), ")");
}

Result<DecoderHyperParams> read_decoder_hyper_params(const HfConfig& config) {
  if (config.mlp_bias) {
    return unimplemented("'", config.config_path, "': mlp_bias = true is not supported");
  }
  DecoderHyperParams params;
  params.vocab_size = config.vocab_size;
  params.hidden_size = config.hidden_size;
  params.intermediate_size = config.intermediate_size;
  params.num_layers = config.num_hidden_layers;
  params.num_heads = config.num_attention_heads;
  params.num_kv_heads = config.num_key_value_heads;
  params.head_dim = config.head_dim;
  params.rms_norm_eps = config.rms_norm_eps;
  STATICLM_ASSIGN_OR_RETURN(params.rope, config.rope_params());
  return params;
}

Status check_sliding_window(const HfConfig& config, int64_t max_cache_len) {
  const std::optional<int64_t> window = config.effective_sliding_window();
  if (window && *window < max_cache_len) {
    return unimplemented("'", config.config_path, "': sliding_window ", *window, " is smaller than max_cache_len ",
                         max_cache_len, "; hf_static v1 attends over the whole cache, so export with max_cache_len ",
                         *window, " or less");
  }
  return ok_status();
}

std::vector<LayerAttention> uniform_attention(const DecoderHyperParams& params) {
  const LayerAttention layer{attention_default_scale(params.head_dim), params.rope};
  return std::vector<LayerAttention>(static_cast<size_t>(params.num_layers), layer);
}

}  // namespace staticlm
