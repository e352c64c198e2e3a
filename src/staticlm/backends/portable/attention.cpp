// attention: for the query at position p, scores = scale * q . k[slot] over cache slots 0..p
// (causal by position), a max-subtracted softmax, and the weighted sum of the value rows.
// Query head h reads kv head h / (Hq / Hkv). Padding rows (negative positions) produce zeros;
// a position at or beyond the cache length fails with OutOfRange before anything is written.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
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

// One (batch, row, query head) output: out[0..head_dim).
template <typename CacheT>
void attend_one(const AttentionShape& shape, float scale, int64_t position, const float* query, const CacheT* keys,
                const CacheT* values, float* scores, float* out) {
  const int64_t slots = position + 1;
  float max_score = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < slots; ++j) {
    const CacheT* key = keys + j * shape.head_dim;
    float dot = 0.0f;
    for (int64_t d = 0; d < shape.head_dim; ++d) {
      dot += query[d] * cache_to_f32(key[d]);
    }
    scores[j] = scale * dot;
    max_score = std::max(max_score, scores[j]);
  }
  float total = 0.0f;
  for (int64_t j = 0; j < slots; ++j) {
    scores[j] = std::exp(scores[j] - max_score);
    total += scores[j];
  }
  std::fill(out, out + shape.head_dim, 0.0f);
  for (int64_t j = 0; j < slots; ++j) {
    const CacheT* value = values + j * shape.head_dim;
    const float weight = scores[j] / total;
    for (int64_t d = 0; d < shape.head_dim; ++d) {
      out[d] += weight * cache_to_f32(value[d]);
    }
  }
}

template <typename CacheT>
class AttentionKernel final : public Kernel {
 public:
  AttentionKernel(const AttentionShape& shape, float scale, DType positions_dtype)
      : shape_(shape), scale_(scale), positions_dtype_(positions_dtype) {}

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
    const CacheT* k_cache = inputs[1].data<const CacheT>();
    const CacheT* v_cache = inputs[2].data<const CacheT>();
    float* out = outputs[0].data<float>();
    const int64_t group = sh.query_heads / sh.kv_heads;
    const int64_t tasks = sh.batch * sh.seq * sh.query_heads;
    context.thread_pool->parallel_for(tasks, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> scores(static_cast<size_t>(sh.cache_len));
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
        const int64_t cache_offset = (b * sh.kv_heads + h / group) * sh.cache_len * sh.head_dim;
        attend_one(sh, scale_, position, q + task * sh.head_dim, k_cache + cache_offset, v_cache + cache_offset,
                   scores.data(), out_head);
      }
    });
    return ok_status();
  }

 private:
  AttentionShape shape_;
  float scale_;
  DType positions_dtype_;
};

}  // namespace

KernelResult make_attention_kernel(const KernelSignature& signature) {
  STATICLM_RETURN_IF_ERROR(check_signature(signature, 4, 4));
  const TensorSpec& q = *signature.inputs[0];
  const TensorSpec& k = *signature.inputs[1];
  const TensorSpec& v = *signature.inputs[2];
  const TensorSpec& positions = *signature.inputs[3];
  if (k.dtype != DType::kF32 && k.dtype != DType::kF16) {
    return unimplemented("attention: cache dtype ", dtype_name(k.dtype),
                         " is not supported by the portable backend (expected f32 or f16)");
  }
  const bool shapes_match = q.dtype == DType::kF32 && q.shape.size() == 4 && k.shape.size() == 4 && v == k &&
                            k.shape[0] == q.shape[0] && k.shape[3] == q.shape[3] && k.shape[1] > 0 &&
                            q.shape[2] % k.shape[1] == 0 && is_index_dtype(positions.dtype) &&
                            positions.shape == Shape{q.shape[1]};
  if (!shapes_match) {
    return invalid_argument("attention: query ", dtype_name(q.dtype), shape_string(q.shape), ", caches ",
                            dtype_name(k.dtype), shape_string(k.shape), " / ", dtype_name(v.dtype),
                            shape_string(v.shape), " and positions ", dtype_name(positions.dtype),
                            shape_string(positions.shape), " do not form a valid attention");
  }
  const AttentionShape shape{q.shape[0], q.shape[1], q.shape[2], k.shape[1], k.shape[2], k.shape[3]};
  const double default_scale = shape.head_dim > 0 ? 1.0 / std::sqrt(static_cast<double>(shape.head_dim)) : 1.0;
  auto scale = signature.attributes.get_float_or("scale", default_scale);
  if (!scale.ok()) {
    return scale.status().with_context("attention");
  }
  if (!(*scale > 0.0) || !std::isfinite(*scale)) {
    return invalid_argument("attention: attribute 'scale': expected a finite value > 0, found ", *scale);
  }
  if (k.dtype == DType::kF16) {
    return std::make_unique<AttentionKernel<uint16_t>>(shape, static_cast<float>(*scale), positions.dtype);
  }
  return std::make_unique<AttentionKernel<float>>(shape, static_cast<float>(*scale), positions.dtype);
}

}  // namespace staticlm::portable
