#include "staticlm/exporter/decoder_graph.h"

#include <cmath>

#include "staticlm/contracts/hf_static_v1_spec.h"

namespace staticlm {

namespace spec = hf_static_v1;

std::string_view kv_update_form_name(KvUpdateForm form) {
  return form == KvUpdateForm::kInPlace ? spec::kKvUpdateInPlace : spec::kKvUpdateReturned;
}

std::string_view logits_mode_name(LogitsMode mode) {
  return mode == LogitsMode::kAll ? spec::kLogitsAll : spec::kLogitsLast;
}

namespace {

// Wraps the graph with the helpers each decoder block is made of.
class DecoderBuilder {
 public:
  DecoderBuilder(const DecoderHyperParams& params, Graph& graph, const DecoderMethodShape& shape)
      : p_(params), g_(graph), shape_(shape) {}

  // A weight value, after checking the constant has the shape the hyper-parameters imply.
  Result<ValueId> weight(ConstantId id, const Shape& expected, std::string_view role) {
    if (id == kNoConstant) {
      return invalid_argument("missing weight for ", role);
    }
    const ConstantEntry& entry = g_.constants().at(id);
    if (entry.shape != expected) {
      return invalid_argument("constant '", entry.name, "' (", role, "): expected shape ", shape_string(expected),
                              ", found ", shape_string(entry.shape));
    }
    return g_.use_constant(id);
  }

  Result<ValueId> optional_weight(ConstantId id, const Shape& expected, std::string_view role) {
    if (id == kNoConstant) {
      return kNoValue;
    }
    return weight(id, expected, role);
  }

  Result<ValueId> rms_norm(ValueId x, ValueId w) {
    return g_.add(OpKind::kRmsNorm, {x, w}, {{"eps", p_.rms_norm_eps}});
  }

  Result<ValueId> linear(ValueId x, ValueId w, ValueId bias = kNoValue) {
    if (bias == kNoValue) {
      return g_.add(OpKind::kLinear, {x, w});
    }
    return g_.add(OpKind::kLinear, {x, w, bias});
  }

  Result<ValueId> reshape(ValueId x, Shape shape) {
    return g_.add(OpKind::kReshape, {x}, {{"shape", std::move(shape)}});
  }

  Result<ValueId> rope(ValueId x, ValueId positions) {
    Attributes attrs;
    p_.rope.to_attributes(attrs);
    return g_.add(OpKind::kRope, {x, positions}, attrs);
  }

  // Projects h to heads [1, S, heads, head_dim], with the optional bias and per-head norm.
  Result<ValueId> project_heads(ValueId h, ConstantId proj, ConstantId bias, ConstantId norm, int64_t heads,
                                std::string_view role) {
    const int64_t width = heads * p_.head_dim;
    STATICLM_ASSIGN_OR_RETURN(ValueId w, weight(proj, {width, p_.hidden_size}, role));
    STATICLM_ASSIGN_OR_RETURN(ValueId b, optional_weight(bias, {width}, str_cat(role, " bias")));
    STATICLM_ASSIGN_OR_RETURN(ValueId projected, linear(h, w, b));
    STATICLM_ASSIGN_OR_RETURN(ValueId split, reshape(projected, {1, shape_.seq_len, heads, p_.head_dim}));
    if (norm == kNoConstant) {
      return split;
    }
    STATICLM_ASSIGN_OR_RETURN(ValueId norm_weight, weight(norm, {p_.head_dim}, str_cat(role, " norm")));
    return rms_norm(split, norm_weight);
  }

  // New K/V rows as the returned-update form outputs them: [1, kv_heads, S, head_dim] in the
  // cache dtype, so the runner copies them into its caches without converting.
  Status add_returned_rows(ValueId rows, const std::string& name) {
    STATICLM_ASSIGN_OR_RETURN(ValueId transposed, g_.add(OpKind::kTranspose, {rows}, {{"perm", Shape{0, 2, 1, 3}}}));
    if (shape_.cache_dtype != DType::kF32) {
      STATICLM_ASSIGN_OR_RETURN(
          transposed, g_.add(OpKind::kCast, {transposed}, {{"dtype", std::string(dtype_name(shape_.cache_dtype))}}));
    }
    return g_.add_output(name, transposed);
  }

  // With `last_row`, the block's output is the chunk's last row alone ([1, 1, hidden]): past the
  // cache writes and attention, nothing but that row's logits reads the other rows.
  Result<ValueId> attention_block(int64_t layer, const DecoderLayerWeights& w, ValueId x, ValueId positions,
                                  ValueId k_cache, ValueId v_cache, bool last_row) {
    const std::string prefix = str_cat("layer ", layer, " ");
    STATICLM_ASSIGN_OR_RETURN(ValueId norm, weight(w.input_norm, {p_.hidden_size}, prefix + "input norm"));
    STATICLM_ASSIGN_OR_RETURN(ValueId h, rms_norm(x, norm));
    STATICLM_ASSIGN_OR_RETURN(ValueId q,
                              project_heads(h, w.q_proj, w.q_bias, w.q_norm, p_.num_heads, prefix + "q_proj"));
    STATICLM_ASSIGN_OR_RETURN(ValueId k,
                              project_heads(h, w.k_proj, w.k_bias, w.k_norm, p_.num_kv_heads, prefix + "k_proj"));
    STATICLM_ASSIGN_OR_RETURN(ValueId v,
                              project_heads(h, w.v_proj, w.v_bias, kNoConstant, p_.num_kv_heads, prefix + "v_proj"));
    STATICLM_ASSIGN_OR_RETURN(q, rope(q, positions));
    STATICLM_ASSIGN_OR_RETURN(k, rope(k, positions));

    const int64_t in_place = shape_.kv_update == KvUpdateForm::kInPlace ? 1 : 0;
    STATICLM_ASSIGN_OR_RETURN(ValueId keys,
                              g_.add(OpKind::kKvCacheUpdate, {k_cache, k, positions}, {{"in_place", in_place}}));
    STATICLM_ASSIGN_OR_RETURN(ValueId values,
                              g_.add(OpKind::kKvCacheUpdate, {v_cache, v, positions}, {{"in_place", in_place}}));
    if (shape_.kv_update == KvUpdateForm::kReturned) {
      STATICLM_RETURN_IF_ERROR(add_returned_rows(k, spec::new_key_name(layer)));
      STATICLM_RETURN_IF_ERROR(add_returned_rows(v, spec::new_value_name(layer)));
    }
    const double scale = 1.0 / std::sqrt(static_cast<double>(p_.head_dim));
    STATICLM_ASSIGN_OR_RETURN(ValueId attended,
                              g_.add(OpKind::kAttention, {q, keys, values, positions}, {{"scale", scale}}));
    STATICLM_ASSIGN_OR_RETURN(ValueId merged, reshape(attended, {1, shape_.seq_len, p_.num_heads * p_.head_dim}));
    if (last_row) {
      STATICLM_ASSIGN_OR_RETURN(merged, last_row_of(merged));
      STATICLM_ASSIGN_OR_RETURN(x, last_row_of(x));
    }
    STATICLM_ASSIGN_OR_RETURN(ValueId o_weight,
                              weight(w.o_proj, {p_.hidden_size, p_.num_heads * p_.head_dim}, prefix + "o_proj"));
    STATICLM_ASSIGN_OR_RETURN(ValueId o_bias, optional_weight(w.o_bias, {p_.hidden_size}, prefix + "o_proj bias"));
    STATICLM_ASSIGN_OR_RETURN(ValueId projected, linear(merged, o_weight, o_bias));
    return g_.add(OpKind::kAdd, {x, projected});
  }

  // Row S - 1 of [1, S, ...]: the contract left-pads a partial chunk, so it is always the last
  // real token.
  Result<ValueId> last_row_of(ValueId x) {
    return g_.add(OpKind::kSlice, {x}, {{"axis", int64_t{1}}, {"start", shape_.seq_len - 1}, {"end", shape_.seq_len}});
  }

  Result<ValueId> mlp_block(int64_t layer, const DecoderLayerWeights& w, ValueId x) {
    const std::string prefix = str_cat("layer ", layer, " ");
    STATICLM_ASSIGN_OR_RETURN(ValueId norm,
                              weight(w.post_attention_norm, {p_.hidden_size}, prefix + "post-attention norm"));
    STATICLM_ASSIGN_OR_RETURN(ValueId h, rms_norm(x, norm));
    STATICLM_ASSIGN_OR_RETURN(ValueId gate_w,
                              weight(w.gate_proj, {p_.intermediate_size, p_.hidden_size}, prefix + "gate_proj"));
    STATICLM_ASSIGN_OR_RETURN(ValueId up_w,
                              weight(w.up_proj, {p_.intermediate_size, p_.hidden_size}, prefix + "up_proj"));
    STATICLM_ASSIGN_OR_RETURN(ValueId down_w,
                              weight(w.down_proj, {p_.hidden_size, p_.intermediate_size}, prefix + "down_proj"));
    STATICLM_ASSIGN_OR_RETURN(ValueId gate, linear(h, gate_w));
    STATICLM_ASSIGN_OR_RETURN(ValueId up, linear(h, up_w));
    STATICLM_ASSIGN_OR_RETURN(ValueId activated, g_.add(OpKind::kSilu, {gate}));
    STATICLM_ASSIGN_OR_RETURN(ValueId gated, g_.add(OpKind::kMul, {activated, up}));
    STATICLM_ASSIGN_OR_RETURN(ValueId down, linear(gated, down_w));
    return g_.add(OpKind::kAdd, {x, down});
  }

 private:
  const DecoderHyperParams& p_;
  Graph& g_;
  const DecoderMethodShape& shape_;
};

}  // namespace

Result<std::unique_ptr<Graph>> build_decoder_graph(const DecoderHyperParams& params, const DecoderWeights& weights,
                                                   std::shared_ptr<ConstantTable> constants,
                                                   const DecoderMethodShape& shape) {
  if (static_cast<int64_t>(weights.layers.size()) != params.num_layers) {
    return invalid_argument("expected weights for ", params.num_layers, " layers, found ", weights.layers.size());
  }
  auto graph = std::make_unique<Graph>(std::move(constants));
  DecoderBuilder b(params, *graph, shape);
  const int64_t seq = shape.seq_len;
  STATICLM_ASSIGN_OR_RETURN(ValueId ids, graph->add_input(std::string(spec::kInputIds), DType::kI64, {1, seq}));
  STATICLM_ASSIGN_OR_RETURN(ValueId positions, graph->add_input(std::string(spec::kCachePosition), DType::kI64, {seq}));
  std::vector<ValueId> k_caches;
  std::vector<ValueId> v_caches;
  const Shape cache_shape = {1, params.num_kv_heads, shape.cache_len, params.head_dim};
  for (int64_t layer = 0; layer < params.num_layers; ++layer) {
    STATICLM_ASSIGN_OR_RETURN(ValueId k, graph->add_input(spec::key_cache_name(layer), shape.cache_dtype, cache_shape));
    STATICLM_ASSIGN_OR_RETURN(ValueId v,
                              graph->add_input(spec::value_cache_name(layer), shape.cache_dtype, cache_shape));
    k_caches.push_back(k);
    v_caches.push_back(v);
  }

  STATICLM_ASSIGN_OR_RETURN(ValueId embed,
                            b.weight(weights.embed_tokens, {params.vocab_size, params.hidden_size}, "token embedding"));
  STATICLM_ASSIGN_OR_RETURN(ValueId x, graph->add(OpKind::kEmbedding, {embed, ids}));
  // With the last row's logits only, the last layer narrows to that row after its attention, as
  // llama.cpp's graph does: its o_proj, MLP, the final norm and the head multiply one row.
  const bool last_row = shape.logits == LogitsMode::kLast && seq > 1;
  for (int64_t layer = 0; layer < params.num_layers; ++layer) {
    const DecoderLayerWeights& w = weights.layers[static_cast<size_t>(layer)];
    STATICLM_ASSIGN_OR_RETURN(
        x, b.attention_block(layer, w, x, positions, k_caches[static_cast<size_t>(layer)],
                             v_caches[static_cast<size_t>(layer)], last_row && layer == params.num_layers - 1));
    STATICLM_ASSIGN_OR_RETURN(x, b.mlp_block(layer, w, x));
  }
  STATICLM_ASSIGN_OR_RETURN(ValueId final_norm, b.weight(weights.final_norm, {params.hidden_size}, "final norm"));
  STATICLM_ASSIGN_OR_RETURN(x, b.rms_norm(x, final_norm));
  STATICLM_ASSIGN_OR_RETURN(ValueId head,
                            b.weight(weights.lm_head, {params.vocab_size, params.hidden_size}, "lm_head"));
  STATICLM_ASSIGN_OR_RETURN(ValueId logits, b.linear(x, head));
  STATICLM_RETURN_IF_ERROR(graph->add_output(std::string(spec::kLogits), logits));
  return graph;
}

}  // namespace staticlm
