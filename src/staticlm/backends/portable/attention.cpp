// SPDX-License-Identifier: Apache-2.0
// attention: for the query at position p, scores = scale * q . k[slot] over cache slots 0..p
// (causal by position), a max-subtracted softmax, and the weighted sum of the value rows.
// Query head h reads kv head h / (Hq / Hkv). Padding rows (negative positions) produce zeros;
// a position at or beyond the cache length fails with OutOfRange before anything is written.
// windowed_attention: the same over slots p - window + 1 .. p only (window 0: all of 0..p), each
// score soft-capped to softcap * tanh(score / softcap) (softcap 0: none) before the softmax.
// Caches are f32, f16 or q8_0, each row widened to f32 as it is read.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

#include "staticlm/backends/portable/element_access.h"
#include "staticlm/backends/portable/kernel_factories.h"

namespace staticlm::portable {
namespace {

struct AttentionShape {
  int64_t batch;
  int64_t seq;
  int64_t query_heads;
  int64_t kv_heads;
  int64_t cache_len;
  int64_t head_dim;
};

// How a query scores the slots it attends.
struct ScoreRule {
  float scale = 1.0f;
  int64_t window = 0;    // 0: every slot up to the query's position
  float softcap = 0.0f;  // 0: none
};

// One (batch, row, query head) output: out[0..head_dim). `keys` / `values` are the kv head's
// rows in `cache_dtype`; `row` holds one widened row.
void attend_one(const AttentionShape& shape, const ScoreRule& rule, DType cache_dtype, int64_t position,
                const float* query, const void* keys, const void* values, float* scores, float* row, float* out) {
  const int64_t first = rule.window > 0 ? std::max<int64_t>(0, position - rule.window + 1) : 0;
  const int64_t slots = position + 1 - first;
  float max_score = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < slots; ++j) {
    const float* key = load_cache_row(keys, cache_dtype, first + j, shape.head_dim, row);
    float dot = 0.0f;
    for (int64_t d = 0; d < shape.head_dim; ++d) {
      dot += query[d] * key[d];
    }
    scores[j] = rule.scale * dot;
    if (rule.softcap > 0.0f) {
      scores[j] = rule.softcap * std::tanh(scores[j] / rule.softcap);
    }
    max_score = std::max(max_score, scores[j]);
  }
  float total = 0.0f;
  for (int64_t j = 0; j < slots; ++j) {
    scores[j] = std::exp(scores[j] - max_score);
    total += scores[j];
  }
  std::fill(out, out + shape.head_dim, 0.0f);
  for (int64_t j = 0; j < slots; ++j) {
    const float* value = load_cache_row(values, cache_dtype, first + j, shape.head_dim, row);
    const float weight = scores[j] / total;
    for (int64_t d = 0; d < shape.head_dim; ++d) {
      out[d] += weight * value[d];
    }
  }
}

class AttentionKernel final : public Kernel {
 public:
  AttentionKernel(const AttentionShape& shape, const ScoreRule& rule, DType cache_dtype, DType positions_dtype)
      : shape_(shape), rule_(rule), cache_dtype_(cache_dtype), positions_dtype_(positions_dtype) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    const AttentionShape& sh = shape_;
    std::vector<int64_t> positions(static_cast<size_t>(sh.seq));
    for (int64_t s = 0; s < sh.seq; ++s) {
      positions[static_cast<size_t>(s)] = load_index(inputs[3].raw(), positions_dtype_, s);
      if (positions[static_cast<size_t>(s)] >= sh.cache_len) {
        return out_of_range("attention: position ", positions[static_cast<size_t>(s)], " at row ", s,
                            " is outside the cache length ", sh.cache_len);
      }
    }
    const float* q = inputs[0].data<float>();
    const auto* k_cache = static_cast<const uint8_t*>(inputs[1].raw());
    const auto* v_cache = static_cast<const uint8_t*>(inputs[2].raw());
    const int64_t row_bytes = cache_row_bytes(cache_dtype_, sh.head_dim);
    float* out = outputs[0].data<float>();
    const int64_t group = sh.query_heads / sh.kv_heads;
    const int64_t tasks = sh.batch * sh.seq * sh.query_heads;
    context.thread_pool->parallel_for(tasks, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> scores(static_cast<size_t>(sh.cache_len));
      std::vector<float> row(static_cast<size_t>(sh.head_dim));
      for (int64_t task = begin; task < end; ++task) {
        // task enumerates [batch, seq, query_heads] in row-major order, as q and out are laid out.
        const int64_t h = task % sh.query_heads;
        const int64_t s = (task / sh.query_heads) % sh.seq;
        const int64_t b = task / (sh.query_heads * sh.seq);
        float* out_head = out + task * sh.head_dim;
        const int64_t position = positions[static_cast<size_t>(s)];
        if (position < 0) {
          std::fill(out_head, out_head + sh.head_dim, 0.0f);
          continue;
        }
        const int64_t cache_offset = (b * sh.kv_heads + h / group) * sh.cache_len * row_bytes;
        attend_one(sh, rule_, cache_dtype_, position, q + task * sh.head_dim, k_cache + cache_offset,
                   v_cache + cache_offset, scores.data(), row.data(), out_head);
      }
    });
    return ok_status();
  }

 private:
  AttentionShape shape_;
  ScoreRule rule_;
  DType cache_dtype_;
  DType positions_dtype_;
};

// Either op's kernel: `windowed` reads the window and the soft-cap as well as the scale.
KernelResult make_kernel(const KernelSignature& signature, bool windowed) {
  const std::string_view op = op_name(signature.op);
  STATICLM_RETURN_IF_ERROR(check_signature(signature, 4, 4));
  const TensorSpec& q = *signature.inputs[0];
  const TensorSpec& k = *signature.inputs[1];
  const TensorSpec& v = *signature.inputs[2];
  const TensorSpec& positions = *signature.inputs[3];
  if (!is_cache_storage_dtype(k.dtype)) {
    return unimplemented(op, ": cache dtype ", dtype_name(k.dtype),
                         " is not supported by the portable backend (expected f32, f16 or q8_0)");
  }
  const bool shapes_match = q.dtype == DType::kF32 && q.shape.size() == 4 && k.shape.size() == 4 && v == k &&
                            k.shape[0] == q.shape[0] && k.shape[3] == q.shape[3] && k.shape[1] > 0 &&
                            q.shape[2] % k.shape[1] == 0 && is_index_dtype(positions.dtype) &&
                            positions.shape == Shape{q.shape[1]};
  if (!shapes_match) {
    return invalid_argument(op, ": query ", dtype_name(q.dtype), shape_string(q.shape), ", caches ",
                            dtype_name(k.dtype), shape_string(k.shape), " / ", dtype_name(v.dtype),
                            shape_string(v.shape), " and positions ", dtype_name(positions.dtype),
                            shape_string(positions.shape), " do not form a valid attention");
  }
  const AttentionShape shape{q.shape[0], q.shape[1], q.shape[2], k.shape[1], k.shape[2], k.shape[3]};
  const Attributes& attrs = signature.attributes;
  auto scale = attrs.get_float_or("scale", attention_default_scale(shape.head_dim));
  if (!scale.ok()) {
    return scale.status().with_context(op);
  }
  if (!(*scale > 0.0) || !std::isfinite(*scale)) {
    return invalid_argument(op, ": attribute 'scale': expected a finite value > 0, found ", *scale);
  }
  ScoreRule rule{static_cast<float>(*scale)};
  if (windowed) {
    auto window = attrs.get_int_or("window", 0);
    auto softcap = attrs.get_float_or("softcap", 0.0);
    if (!window.ok() || !softcap.ok()) {
      return (window.ok() ? softcap.status() : window.status()).with_context(op);
    }
    if (*window < 0 || !(*softcap >= 0.0) || !std::isfinite(*softcap)) {
      return invalid_argument(op, ": attributes 'window' and 'softcap': expected values >= 0, found ", *window, " and ",
                              *softcap);
    }
    rule.window = *window;
    rule.softcap = static_cast<float>(*softcap);
  }
  if (k.dtype == DType::kQ8_0 && shape.head_dim % 32 != 0) {
    return invalid_argument(op, ": a q8_0 cache needs head_dim a multiple of 32, found ", shape.head_dim);
  }
  return std::make_unique<AttentionKernel>(shape, rule, k.dtype, positions.dtype);
}

}  // namespace

KernelResult make_attention_kernel(const KernelSignature& signature) {
  return make_kernel(signature, false);
}

KernelResult make_windowed_attention_kernel(const KernelSignature& signature) {
  return make_kernel(signature, true);
}

}  // namespace staticlm::portable
