// SPDX-License-Identifier: Apache-2.0
// Phi3ForCausalLM (Phi-3, Phi-3.5, Phi-4-mini): Llama's blocks and graph, with q / k / v fused into
// qkv_proj and gate / up into gate_up_proj (split into the program's separate projections here),
// part of each head rotating (partial_rotary_factor: 0.75 on Phi-4-mini), longrope with its short
// and long factors and attention factor (HfConfig::rope_params), and sliding_window on every layer.
#include "staticlm/exporter/decoder_builder.h"
#include "staticlm/exporter/models/families.h"
#include "staticlm/exporter/weight_mapper.h"

namespace staticlm {

// Phi3Config's defaults (transformers 4.45).
const std::string_view kPhi3ConfigDefaults = R"({
  "max_position_embeddings": 4096, "original_max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
  "rope_theta": 10000.0, "tie_word_embeddings": false, "hidden_act": "silu"
})";

namespace {

// The constants for the row blocks of the fused weight `name`, one per `rows` entry, in order;
// each constant is named `name` plus its suffix. Fails with InvalidArgument naming the tensor when
// its shape is not [sum of rows, hidden].
Result<std::vector<ConstantId>> split_rows(WeightMapper& weights, const SafetensorsCheckpoint& checkpoint,
                                           const std::string& name, int64_t hidden,
                                           std::initializer_list<std::pair<const char*, int64_t>> rows) {
  STATICLM_ASSIGN_OR_RETURN(const SafetensorsTensor* tensor, checkpoint.get(name));
  int64_t total = 0;
  std::vector<std::string> parts;
  for (const auto& [suffix, count] : rows) {
    total += count;
    parts.push_back(str_cat(suffix, " ", count));
  }
  const Shape expected = {total, hidden};
  if (tensor->shape != expected) {
    return invalid_argument("'", tensor->file, "': tensor '", name, "': expected shape ", shape_string(expected),
                            " (rows: ", join(parts, ", "), "), found ", shape_string(tensor->shape));
  }
  std::vector<ConstantId> ids;
  int64_t begin = 0;
  for (const auto& [suffix, count] : rows) {
    STATICLM_ASSIGN_OR_RETURN(ConstantId id,
                              weights.require_rows(name, begin, begin + count, str_cat(name, ".", suffix)));
    ids.push_back(id);
    begin += count;
  }
  return ids;
}

}  // namespace

Result<DecoderModel> load_phi3(const HfConfig& config, const SafetensorsCheckpoint& checkpoint,
                               ConstantTable& constants, const FamilyOptions& options) {
  STATICLM_ASSIGN_OR_RETURN(DecoderModel model, read_llama_style(config, options, {.sliding_layers = every_layer}));
  const DecoderHyperParams& p = model.params;
  WeightMapper weights(checkpoint, constants, options.weight_dtype);
  STATICLM_RETURN_IF_ERROR(weights.llama_globals(config, model.weights));
  const int64_t q_rows = p.num_heads * p.head_dim;
  const int64_t kv_rows = p.num_kv_heads * p.head_dim;
  for (int64_t layer = 0; layer < p.num_layers; ++layer) {
    const std::string prefix = str_cat("model.layers.", layer, ".");
    DecoderLayerWeights w;
    STATICLM_ASSIGN_OR_RETURN(w.input_norm, weights.require(prefix + "input_layernorm.weight"));
    STATICLM_ASSIGN_OR_RETURN(std::vector<ConstantId> qkv,
                              split_rows(weights, checkpoint, prefix + "self_attn.qkv_proj.weight", p.hidden_size,
                                         {{"q", q_rows}, {"k", kv_rows}, {"v", kv_rows}}));
    w.q_proj = qkv[0];
    w.k_proj = qkv[1];
    w.v_proj = qkv[2];
    STATICLM_ASSIGN_OR_RETURN(w.o_proj, weights.require(prefix + "self_attn.o_proj.weight"));
    STATICLM_ASSIGN_OR_RETURN(w.post_attention_norm, weights.require(prefix + "post_attention_layernorm.weight"));
    STATICLM_ASSIGN_OR_RETURN(std::vector<ConstantId> gate_up,
                              split_rows(weights, checkpoint, prefix + "mlp.gate_up_proj.weight", p.hidden_size,
                                         {{"gate", p.intermediate_size}, {"up", p.intermediate_size}}));
    w.gate_proj = gate_up[0];
    w.up_proj = gate_up[1];
    STATICLM_ASSIGN_OR_RETURN(w.down_proj, weights.require(prefix + "mlp.down_proj.weight"));
    model.weights.layers.push_back(w);
  }
  return model;
}

}  // namespace staticlm
