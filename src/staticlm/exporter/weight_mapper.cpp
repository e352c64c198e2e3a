// SPDX-License-Identifier: Apache-2.0
#include "staticlm/exporter/weight_mapper.h"

#include <cstring>
#include <vector>

namespace staticlm {

Result<ConstantId> WeightMapper::optional(const std::string& name) {
  const SafetensorsTensor* tensor = checkpoint_.find(name);
  if (tensor == nullptr) {
    return kNoConstant;
  }
  if (ConstantId existing = constants_.find(name); existing >= 0) {
    return existing;
  }
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

Result<ConstantId> WeightMapper::require_shifted(const std::string& name, float offset) {
  STATICLM_ASSIGN_OR_RETURN(const SafetensorsTensor* tensor, checkpoint_.get(name));
  if (ConstantId existing = constants_.find(name); existing >= 0) {
    return existing;
  }
  auto source = shifted_f32_source(*tensor, offset);
  if (!source.ok()) {
    return source.status().with_context(str_cat("'", tensor->file, "': tensor '", name, "'"));
  }
  return constants_.add(name, DType::kF32, tensor->shape, std::move(source).value());
}

Result<ConstantId> WeightMapper::require_scaled(const std::string& name, float factor) {
  STATICLM_ASSIGN_OR_RETURN(const SafetensorsTensor* tensor, checkpoint_.get(name));
  if (ConstantId existing = constants_.find(name); existing >= 0) {
    return existing;
  }
  auto source = scaled_f32_source(*tensor, factor);
  if (!source.ok()) {
    return source.status().with_context(str_cat("'", tensor->file, "': tensor '", name, "'"));
  }
  return constants_.add(name, DType::kF32, tensor->shape, std::move(source).value());
}

Result<ConstantId> WeightMapper::require_rows(const std::string& name, int64_t begin, int64_t end,
                                              const std::string& constant_name) {
  STATICLM_ASSIGN_OR_RETURN(const SafetensorsTensor* tensor, checkpoint_.get(name));
  if (tensor->shape.size() != 2 || begin < 0 || begin >= end || end > tensor->shape[0]) {
    return invalid_argument("'", tensor->file, "': tensor '", name, "': expected a matrix of at least ", end,
                            " rows, found shape ", shape_string(tensor->shape));
  }
  if (ConstantId existing = constants_.find(constant_name); existing >= 0) {
    return existing;
  }
  // Rows are contiguous: the slice is a sub-range of the tensor's bytes.
  const uint64_t row_bytes = tensor->bytes.size() / static_cast<uint64_t>(tensor->shape[0]);
  SafetensorsTensor rows = *tensor;
  rows.shape = {end - begin, tensor->shape[1]};
  rows.bytes =
      tensor->bytes.subspan(static_cast<uint64_t>(begin) * row_bytes, static_cast<uint64_t>(end - begin) * row_bytes);
  auto source = converted_source(rows, weight_dtype_);
  if (!source.ok()) {
    return source.status().with_context(str_cat("'", tensor->file, "': tensor '", name, "'"));
  }
  return constants_.add(constant_name, weight_dtype_, rows.shape, std::move(source).value());
}

Result<ConstantId> WeightMapper::scalar(const std::string& name, float value) {
  std::vector<uint8_t> bytes(sizeof(float));
  std::memcpy(bytes.data(), &value, sizeof(float));
  return constants_.add(name, DType::kF32, {1}, make_owned_source(std::move(bytes)));
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
