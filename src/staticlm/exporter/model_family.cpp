// SPDX-License-Identifier: Apache-2.0
#include "staticlm/exporter/model_family.h"

#include <array>
#include <cmath>

#include "staticlm/exporter/models/families.h"
#include "staticlm/ops/op_set.h"

namespace staticlm {
namespace {

const std::array<ModelFamily, 11> kFamilies = {{
    {"LlamaForCausalLM", {}, load_llama, build_llama_graph},
    {"Qwen2ForCausalLM", kQwen2ConfigDefaults, load_qwen2, build_llama_graph},
    {"MistralForCausalLM", kMistralConfigDefaults, load_mistral, build_llama_graph},
    {"Qwen3ForCausalLM", kQwen2ConfigDefaults, load_qwen3, build_llama_graph},
    {"Gemma2ForCausalLM", kGemma2ConfigDefaults, load_gemma2, build_gemma_graph},
    {"Gemma3ForCausalLM", kGemma3TextConfigDefaults, load_gemma3, build_gemma_graph},
    {"Gemma3ForConditionalGeneration", kGemma3TextConfigDefaults, load_gemma3, build_gemma_graph},
    {"Phi3ForCausalLM", kPhi3ConfigDefaults, load_phi3, build_llama_graph},
    {"SmolLM3ForCausalLM", kSmolLM3ConfigDefaults, load_smollm3, build_llama_graph},
    {"GraniteForCausalLM", kGraniteConfigDefaults, load_granite, build_llama_graph},
    {"Olmo2ForCausalLM", kOlmo2ConfigDefaults, load_olmo2, build_olmo2_graph},
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

Result<DecoderHyperParams> read_decoder_hyper_params(const HfConfig& config, const FamilyOptions& options) {
  if (config.mlp_bias) {
    return unimplemented("'", config.config_path, "': mlp_bias = true is not supported (supported: false)");
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
  STATICLM_ASSIGN_OR_RETURN(params.rope, config.rope_params(options.max_cache_len));
  params.rope_attention_factor = config.rope_attention_factor();
  return params;
}

std::vector<LayerAttention> uniform_attention(const DecoderHyperParams& params) {
  LayerAttention layer{attention_default_scale(params.head_dim), params.rope};
  layer.rope_attention_factor = params.rope_attention_factor;
  return std::vector<LayerAttention>(static_cast<size_t>(params.num_layers), layer);
}

Result<std::vector<bool>> sliding_layer_types(const HfConfig& config) {
  std::vector<bool> sliding;
  for (size_t layer = 0; layer < config.layer_types.size(); ++layer) {
    const std::string& type = config.layer_types[layer];
    if (type != kSlidingAttention && type != kFullAttention) {
      return unimplemented("'", config.config_path, "': layer_types[", layer, "] '", type,
                           "' is not supported (supported: ", kSlidingAttention, ", ", kFullAttention, ")");
    }
    sliding.push_back(type == kSlidingAttention);
  }
  return sliding;
}

Result<std::vector<int64_t>> layer_windows(const HfConfig& config, const std::vector<bool>& slides_by_default) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<bool> sliding, sliding_layer_types(config));
  if (sliding.empty()) {
    sliding = slides_by_default;
  }
  sliding.resize(static_cast<size_t>(config.num_hidden_layers), false);
  const int64_t window = config.effective_sliding_window().value_or(0);
  std::vector<int64_t> windows;
  for (bool slides : sliding) {
    windows.push_back(slides ? window : 0);
  }
  return windows;
}

bool is_exact_scale(double value) {
  int exponent = 0;
  // 2^-64 ... 2^64: far inside f32's normal range for the weights of a model.
  return std::frexp(value, &exponent) == 0.5 && exponent >= -63 && exponent <= 65;
}

}  // namespace staticlm
