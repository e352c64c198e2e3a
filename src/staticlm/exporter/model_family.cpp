#include "staticlm/exporter/model_family.h"

#include <array>

namespace staticlm {

Result<DecoderModel> load_llama(const HfConfig&, const SafetensorsCheckpoint&, ConstantTable&, const FamilyOptions&);
Result<DecoderModel> load_qwen2(const HfConfig&, const SafetensorsCheckpoint&, ConstantTable&, const FamilyOptions&);
Result<DecoderModel> load_mistral(const HfConfig&, const SafetensorsCheckpoint&, ConstantTable&, const FamilyOptions&);
Result<DecoderModel> load_qwen3(const HfConfig&, const SafetensorsCheckpoint&, ConstantTable&, const FamilyOptions&);

namespace {

constexpr std::array<ModelFamily, 4> kFamilies = {{
    {"LlamaForCausalLM", load_llama},
    {"Qwen2ForCausalLM", load_qwen2},
    {"MistralForCausalLM", load_mistral},
    {"Qwen3ForCausalLM", load_qwen3},
}};

}  // namespace

std::span<const ModelFamily> model_families() {
  return kFamilies;
}

Result<const ModelFamily*> find_model_family(const HfConfig& config) {
  for (const std::string& architecture : config.architectures) {
    for (const ModelFamily& family : kFamilies) {
      if (family.architecture == architecture) {
        return &family;
      }
    }
  }
  std::vector<std::string> supported;
  for (const ModelFamily& family : kFamilies) {
    supported.emplace_back(family.architecture);
  }
  return unimplemented("'", config.config_path, "': architecture ", join(config.architectures, ", "),
                       " is not supported (supported: ", join(supported, ", "), ")");
}

Result<DecoderHyperParams> read_decoder_hyper_params(const HfConfig& config) {
  if (config.hidden_act != "silu") {
    return unimplemented("'", config.config_path, "': hidden_act '", config.hidden_act,
                         "' is not supported (supported: silu)");
  }
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

Result<DecoderModel> load_llama_style(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                                      ConstantTable& constants, const FamilyOptions& options,
                                      const LlamaStyleLayout& layout) {
  if (layout.sliding_window) {
    STATICLM_RETURN_IF_ERROR(check_sliding_window(config, options.max_cache_len));
  }
  DecoderModel model;
  STATICLM_ASSIGN_OR_RETURN(model.params, read_decoder_hyper_params(config));
  WeightMapper weights(checkpoint, constants, options.weight_dtype);
  STATICLM_RETURN_IF_ERROR(weights.llama_globals(config, model.weights));
  for (int64_t layer = 0; layer < model.params.num_layers; ++layer) {
    STATICLM_ASSIGN_OR_RETURN(DecoderLayerWeights w,
                              weights.llama_layer(layer, layout.qkv_bias, layout.o_bias, layout.qk_norm));
    model.weights.layers.push_back(w);
  }
  return model;
}

Result<ConstantId> WeightMapper::optional(const std::string& name) {
  const SafetensorsTensor* tensor = checkpoint_.find(name);
  if (tensor == nullptr) {
    return kNoConstant;
  }
  if (ConstantId existing = constants_.find(name); existing >= 0) {
    return existing;
  }
  // Norm weights and biases are tiny and precision-sensitive: keep them in f32.
  const DType target = tensor->shape.size() == 1 ? DType::kF32 : weight_dtype_;
  auto source = converted_source(*tensor, target);
  if (!source.ok()) {
    return source.status().with_context(str_cat("'", tensor->file, "': tensor '", name, "'"));
  }
  return constants_.add(name, target, tensor->shape, std::move(source).value());
}

Result<ConstantId> WeightMapper::require(const std::string& name) {
  STATICLM_RETURN_IF_ERROR(checkpoint_.get(name).status());
  return optional(name);
}

Result<DecoderLayerWeights> WeightMapper::llama_layer(int64_t layer, bool qkv_bias, bool o_bias, bool qk_norm) {
  const std::string prefix = str_cat("model.layers.", layer, ".");
  DecoderLayerWeights w;
  STATICLM_ASSIGN_OR_RETURN(w.input_norm, require(prefix + "input_layernorm.weight"));
  STATICLM_ASSIGN_OR_RETURN(w.q_proj, require(prefix + "self_attn.q_proj.weight"));
  STATICLM_ASSIGN_OR_RETURN(w.k_proj, require(prefix + "self_attn.k_proj.weight"));
  STATICLM_ASSIGN_OR_RETURN(w.v_proj, require(prefix + "self_attn.v_proj.weight"));
  STATICLM_ASSIGN_OR_RETURN(w.o_proj, require(prefix + "self_attn.o_proj.weight"));
  if (qkv_bias) {
    STATICLM_ASSIGN_OR_RETURN(w.q_bias, require(prefix + "self_attn.q_proj.bias"));
    STATICLM_ASSIGN_OR_RETURN(w.k_bias, require(prefix + "self_attn.k_proj.bias"));
    STATICLM_ASSIGN_OR_RETURN(w.v_bias, require(prefix + "self_attn.v_proj.bias"));
  }
  if (o_bias) {
    STATICLM_ASSIGN_OR_RETURN(w.o_bias, require(prefix + "self_attn.o_proj.bias"));
  }
  if (qk_norm) {
    STATICLM_ASSIGN_OR_RETURN(w.q_norm, require(prefix + "self_attn.q_norm.weight"));
    STATICLM_ASSIGN_OR_RETURN(w.k_norm, require(prefix + "self_attn.k_norm.weight"));
  }
  STATICLM_ASSIGN_OR_RETURN(w.post_attention_norm, require(prefix + "post_attention_layernorm.weight"));
  STATICLM_ASSIGN_OR_RETURN(w.gate_proj, require(prefix + "mlp.gate_proj.weight"));
  STATICLM_ASSIGN_OR_RETURN(w.up_proj, require(prefix + "mlp.up_proj.weight"));
  STATICLM_ASSIGN_OR_RETURN(w.down_proj, require(prefix + "mlp.down_proj.weight"));
  return w;
}

Status WeightMapper::llama_globals(const HfConfig& config, DecoderWeights& weights) {
  STATICLM_ASSIGN_OR_RETURN(weights.embed_tokens, require("model.embed_tokens.weight"));
  STATICLM_ASSIGN_OR_RETURN(weights.final_norm, require("model.norm.weight"));
  if (config.tie_word_embeddings) {
    // Hugging Face ties the head to the embedding even when a checkpoint also stores a copy.
    weights.lm_head = weights.embed_tokens;
  } else {
    STATICLM_ASSIGN_OR_RETURN(weights.lm_head, require("lm_head.weight"));
  }
  return ok_status();
}

}  // namespace staticlm
