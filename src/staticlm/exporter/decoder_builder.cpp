// SPDX-License-Identifier: Apache-2.0
#include "staticlm/exporter/decoder_builder.h"

#include <algorithm>
#include <cstring>

#include "staticlm/contracts/hf_static_v1_spec.h"

namespace staticlm {

namespace spec = hf_static_v1;

Result<DecoderBuilder> DecoderBuilder::start(const DecoderModel& model, std::shared_ptr<ConstantTable> constants,
                                             const DecoderMethodShape& shape) {
  const auto layers = static_cast<size_t>(model.params.num_layers);
  if (model.weights.layers.size() != layers || model.attention.size() != layers) {
    return invalid_argument("expected weights for ", layers, " layers, found ", model.weights.layers.size());
  }
  return start(model.params, std::move(constants), shape);
}

Result<DecoderBuilder> DecoderBuilder::start(const DecoderHyperParams& params, std::shared_ptr<ConstantTable> constants,
                                             const DecoderMethodShape& shape) {
  DecoderBuilder b(params, std::make_unique<Graph>(std::move(constants)), shape);
  Graph& g = *b.graph_;
  const int64_t seq = shape.seq_len;
  STATICLM_ASSIGN_OR_RETURN(b.input_ids_, g.add_input(std::string(spec::kInputIds), DType::kI64, {1, seq}));
  STATICLM_ASSIGN_OR_RETURN(b.positions_, g.add_input(std::string(spec::kCachePosition), DType::kI64, {seq}));
  const Shape cache_shape = {1, params.num_kv_heads, shape.cache_len, params.head_dim};
  for (int64_t layer = 0; layer < params.num_layers; ++layer) {
    STATICLM_ASSIGN_OR_RETURN(ValueId k, g.add_input(spec::key_cache_name(layer), shape.cache_dtype, cache_shape));
    STATICLM_ASSIGN_OR_RETURN(ValueId v, g.add_input(spec::value_cache_name(layer), shape.cache_dtype, cache_shape));
    b.key_caches_.push_back(k);
    b.value_caches_.push_back(v);
  }
  return b;
}

std::string DecoderBuilder::layer_role(int64_t layer, std::string_view what) {
  return str_cat("layer ", layer, " ", what);
}

Result<ValueId> DecoderBuilder::weight(ConstantId id, const Shape& expected, std::string_view role) {
  if (id == kNoConstant) {
    return invalid_argument("missing weight for ", role);
  }
  const ConstantEntry& entry = graph_->constants().at(id);
  if (entry.shape != expected) {
    return invalid_argument("constant '", entry.name, "' (", role, "): expected shape ", shape_string(expected),
                            ", found ", shape_string(entry.shape));
  }
  return graph_->use_constant(id);
}

Result<ValueId> DecoderBuilder::optional_weight(ConstantId id, const Shape& expected, std::string_view role) {
  if (id == kNoConstant) {
    return kNoValue;
  }
  return weight(id, expected, role);
}

Result<ValueId> DecoderBuilder::embed(ConstantId table) {
  STATICLM_ASSIGN_OR_RETURN(ValueId w, weight(table, {params_.vocab_size, params_.hidden_size}, "token embedding"));
  return graph_->add(OpKind::kEmbedding, {w, input_ids_});
}

Result<ValueId> DecoderBuilder::scale(ValueId x, ConstantId factor, std::string_view role) {
  STATICLM_ASSIGN_OR_RETURN(ValueId value, weight(factor, {1}, role));
  return graph_->add(OpKind::kMul, {x, value});
}

Result<ValueId> DecoderBuilder::softcap(ValueId x, double cap) {
  return graph_->add(OpKind::kSoftcap, {x}, {{"cap", cap}});
}

Result<ValueId> DecoderBuilder::rms_norm(ValueId x, ConstantId w, int64_t dim, std::string_view role) {
  STATICLM_ASSIGN_OR_RETURN(ValueId norm, weight(w, {dim}, role));
  return graph_->add(OpKind::kRmsNorm, {x, norm}, {{"eps", params_.rms_norm_eps}});
}

namespace {

Result<ValueId> linear_node(Graph& g, ValueId x, ValueId w, ValueId bias) {
  if (bias == kNoValue) {
    return g.add(OpKind::kLinear, {x, w});
  }
  return g.add(OpKind::kLinear, {x, w, bias});
}

}  // namespace

Result<ValueId> DecoderBuilder::linear(ValueId x, ConstantId w, ConstantId bias, int64_t out, int64_t in,
                                       std::string_view role) {
  STATICLM_ASSIGN_OR_RETURN(ValueId weight_value, weight(w, {out, in}, role));
  STATICLM_ASSIGN_OR_RETURN(ValueId bias_value, optional_weight(bias, {out}, str_cat(role, " bias")));
  return linear_node(*graph_, x, weight_value, bias_value);
}

Result<ValueId> DecoderBuilder::add(ValueId a, ValueId b) {
  return graph_->add(OpKind::kAdd, {a, b});
}

Result<ValueId> DecoderBuilder::reshape(ValueId x, Shape shape) {
  return graph_->add(OpKind::kReshape, {x}, {{"shape", std::move(shape)}});
}

Result<ValueId> DecoderBuilder::rope(ValueId x, const RopeParams& rope) {
  Attributes attrs;
  rope.to_attributes(attrs);
  return graph_->add(OpKind::kRope, {x, positions_}, attrs);
}

// h to heads [1, S, heads, head_dim], with the optional bias and norm (of each head, or of the whole
// projection before the split).
Result<ValueId> DecoderBuilder::project_heads(ValueId h, ConstantId proj, ConstantId bias, ConstantId norm,
                                              QkNormScope norm_scope, int64_t heads, const std::string& role) {
  const int64_t width = heads * params_.head_dim;
  STATICLM_ASSIGN_OR_RETURN(ValueId projected, linear(h, proj, bias, width, params_.hidden_size, role));
  if (norm != kNoConstant && norm_scope == QkNormScope::kWholeProjection) {
    STATICLM_ASSIGN_OR_RETURN(projected, rms_norm(projected, norm, width, str_cat(role, " norm")));
  }
  STATICLM_ASSIGN_OR_RETURN(ValueId split, reshape(projected, {1, shape_.seq_len, heads, params_.head_dim}));
  if (norm == kNoConstant || norm_scope == QkNormScope::kWholeProjection) {
    return split;
  }
  return rms_norm(split, norm, params_.head_dim, str_cat(role, " norm"));
}

// Multiplies the channels `rope` rotates by `factor` and passes the others: an f32 [head_dim]
// constant, one per model (every layer's rope has the same width and factor).
Result<ValueId> DecoderBuilder::scale_rotated(ValueId x, const RopeParams& rope, double factor) {
  constexpr std::string_view kName = "rope.attention_factor";
  ConstantTable& constants = graph_->mutable_constants();
  ConstantId id = constants.find(kName);
  if (id < 0) {
    std::vector<float> values(static_cast<size_t>(params_.head_dim), 1.0f);
    std::fill(values.begin(), values.begin() + std::min(rope.rotary_dim, params_.head_dim), static_cast<float>(factor));
    std::vector<uint8_t> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    STATICLM_ASSIGN_OR_RETURN(
        id, constants.add(kName, DType::kF32, {params_.head_dim}, make_owned_source(std::move(bytes))));
  }
  STATICLM_ASSIGN_OR_RETURN(ValueId scale, weight(id, {params_.head_dim}, "rope attention factor"));
  return graph_->add(OpKind::kMul, {x, scale});
}

// New K/V rows as the returned-update form outputs them: [1, kv_heads, S, head_dim] in the cache
// dtype, so the runner copies them into its caches without converting.
Status DecoderBuilder::add_returned_rows(ValueId rows, const std::string& name) {
  STATICLM_ASSIGN_OR_RETURN(ValueId transposed, graph_->add(OpKind::kTranspose, {rows}, {{"perm", Shape{0, 2, 1, 3}}}));
  if (shape_.cache_dtype != DType::kF32) {
    STATICLM_ASSIGN_OR_RETURN(
        transposed, graph_->add(OpKind::kCast, {transposed}, {{"dtype", std::string(dtype_name(shape_.cache_dtype))}}));
  }
  return graph_->add_output(name, transposed);
}

Result<ValueId> DecoderBuilder::self_attention(int64_t layer, ValueId h, const DecoderLayerWeights& w,
                                               const LayerAttention& attention) {
  const int64_t heads = params_.num_heads;
  const int64_t kv_heads = params_.num_kv_heads;
  STATICLM_ASSIGN_OR_RETURN(
      ValueId q, project_heads(h, w.q_proj, w.q_bias, w.q_norm, w.qk_norm_scope, heads, layer_role(layer, "q_proj")));
  STATICLM_ASSIGN_OR_RETURN(ValueId k, project_heads(h, w.k_proj, w.k_bias, w.k_norm, w.qk_norm_scope, kv_heads,
                                                     layer_role(layer, "k_proj")));
  STATICLM_ASSIGN_OR_RETURN(ValueId v, project_heads(h, w.v_proj, w.v_bias, kNoConstant, w.qk_norm_scope, kv_heads,
                                                     layer_role(layer, "v_proj")));
  if (attention.rope) {
    STATICLM_ASSIGN_OR_RETURN(q, rope(q, *attention.rope));
    STATICLM_ASSIGN_OR_RETURN(k, rope(k, *attention.rope));
    if (attention.rope_attention_factor != 1.0) {
      STATICLM_ASSIGN_OR_RETURN(q, scale_rotated(q, *attention.rope, attention.rope_attention_factor));
      STATICLM_ASSIGN_OR_RETURN(k, scale_rotated(k, *attention.rope, attention.rope_attention_factor));
    }
  }
  const int64_t in_place = shape_.kv_update == KvUpdateForm::kInPlace ? 1 : 0;
  const auto index = static_cast<size_t>(layer);
  STATICLM_ASSIGN_OR_RETURN(ValueId keys, graph_->add(OpKind::kKvCacheUpdate, {key_caches_.at(index), k, positions_},
                                                      {{"in_place", in_place}}));
  STATICLM_ASSIGN_OR_RETURN(
      ValueId values,
      graph_->add(OpKind::kKvCacheUpdate, {value_caches_.at(index), v, positions_}, {{"in_place", in_place}}));
  if (shape_.kv_update == KvUpdateForm::kReturned) {
    STATICLM_RETURN_IF_ERROR(add_returned_rows(k, spec::new_key_name(layer)));
    STATICLM_RETURN_IF_ERROR(add_returned_rows(v, spec::new_value_name(layer)));
  }
  // A window as long as the cache never bites: such a layer keeps the plain attention's kernels.
  const bool windowed = attention.window > 0 && attention.window < shape_.cache_len;
  ValueId attended = kNoValue;
  if (windowed || attention.softcap > 0.0) {
    STATICLM_ASSIGN_OR_RETURN(attended, graph_->add(OpKind::kWindowedAttention, {q, keys, values, positions_},
                                                    {{"scale", attention.scale},
                                                     {"window", windowed ? attention.window : int64_t{0}},
                                                     {"softcap", attention.softcap}}));
  } else {
    STATICLM_ASSIGN_OR_RETURN(
        attended, graph_->add(OpKind::kAttention, {q, keys, values, positions_}, {{"scale", attention.scale}}));
  }
  return reshape(attended, {1, shape_.seq_len, heads * params_.head_dim});
}

Result<ValueId> DecoderBuilder::output_projection(int64_t layer, ValueId attended, const DecoderLayerWeights& w) {
  return linear(attended, w.o_proj, w.o_bias, params_.hidden_size, params_.num_heads * params_.head_dim,
                layer_role(layer, "o_proj"));
}

bool DecoderBuilder::narrows_after_attention(int64_t layer) const {
  return shape_.logits == LogitsMode::kLast && !shape_.hidden_states && shape_.seq_len > 1 &&
         layer == params_.num_layers - 1;
}

Result<ValueId> DecoderBuilder::last_row_of(ValueId x) {
  return graph_->add(OpKind::kSlice, {x},
                     {{"axis", int64_t{1}}, {"start", shape_.seq_len - 1}, {"end", shape_.seq_len}});
}

Result<ValueId> DecoderBuilder::gated_mlp(int64_t layer, ValueId h, const DecoderLayerWeights& w,
                                          Activation activation) {
  const int64_t hidden = params_.hidden_size;
  const int64_t inner = params_.intermediate_size;
  STATICLM_ASSIGN_OR_RETURN(ValueId gate_w, weight(w.gate_proj, {inner, hidden}, layer_role(layer, "gate_proj")));
  STATICLM_ASSIGN_OR_RETURN(ValueId up_w, weight(w.up_proj, {inner, hidden}, layer_role(layer, "up_proj")));
  STATICLM_ASSIGN_OR_RETURN(ValueId down_w, weight(w.down_proj, {hidden, inner}, layer_role(layer, "down_proj")));
  STATICLM_ASSIGN_OR_RETURN(ValueId gate, linear_node(*graph_, h, gate_w, kNoValue));
  STATICLM_ASSIGN_OR_RETURN(ValueId up, linear_node(*graph_, h, up_w, kNoValue));
  ValueId activated = kNoValue;
  switch (activation) {
    case Activation::kSilu: {
      STATICLM_ASSIGN_OR_RETURN(activated, graph_->add(OpKind::kSilu, {gate}));
      break;
    }
    case Activation::kGelu: {
      STATICLM_ASSIGN_OR_RETURN(activated, graph_->add(OpKind::kGelu, {gate}));
      break;
    }
    case Activation::kGeluTanh: {
      STATICLM_ASSIGN_OR_RETURN(activated, graph_->add(OpKind::kGelu, {gate}, {{"approximate", std::string("tanh")}}));
      break;
    }
  }
  STATICLM_ASSIGN_OR_RETURN(ValueId gated, graph_->add(OpKind::kMul, {activated, up}));
  return linear_node(*graph_, gated, down_w, kNoValue);
}

Result<ValueId> DecoderBuilder::lm_head(ValueId x, ConstantId head) {
  return linear(x, head, kNoConstant, params_.vocab_size, params_.hidden_size, "lm_head");
}

Result<std::unique_ptr<Graph>> DecoderBuilder::finish(ValueId logits) {
  STATICLM_RETURN_IF_ERROR(graph_->add_output(std::string(spec::kLogits), logits));
  return std::move(graph_);
}

Result<std::unique_ptr<Graph>> DecoderBuilder::finish_hidden_states(ValueId x) {
  STATICLM_RETURN_IF_ERROR(graph_->add_output(std::string(spec::kHiddenStates), x));
  return std::move(graph_);
}

}  // namespace staticlm
