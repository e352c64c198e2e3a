// The cpu attention: the portable kernel's semantics (docs/ops.md: causal by position, grouped
// query heads, zeros for padding rows, OutOfRange for a position past the cache) with the score
// and weighted-sum rows and the softmax's exponentials vectorized per ISA.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "staticlm/backends/cpu/kernels/cpu_kernel_factories.h"
#include "staticlm/backends/portable/element_access.h"
#include "staticlm/backends/portable/kernel_factories.h"

namespace staticlm::cpu {
namespace {

struct Shape4 {
  int64_t batch, seq, query_heads, kv_heads, cache_len, head_dim;
};

class AttentionKernel final : public Kernel {
 public:
  AttentionKernel(AttentionRowFns fns, const Shape4& shape, float scale, DType cache_dtype, DType positions_dtype)
      : fns_(fns), shape_(shape), scale_(scale), cache_dtype_(cache_dtype), positions_dtype_(positions_dtype) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    const Shape4& sh = shape_;
    for (int64_t s = 0; s < sh.seq; ++s) {
      const int64_t position = portable::load_index(inputs[3].raw(), positions_dtype_, s);
      if (position >= sh.cache_len) {
        return out_of_range("attention: position ", position, " at row ", s, " is outside the cache length ",
                            sh.cache_len);
      }
    }
    const float* q = inputs[0].data<float>();
    const auto* k_cache = static_cast<const uint8_t*>(inputs[1].raw());
    const auto* v_cache = static_cast<const uint8_t*>(inputs[2].raw());
    const size_t element = cache_dtype_ == DType::kF16 ? 2 : 4;
    float* out = outputs[0].data<float>();
    const int64_t group = sh.query_heads / sh.kv_heads;
    const int64_t tasks = sh.batch * sh.seq * sh.query_heads;
    const void* positions = inputs[3].raw();
    context.thread_pool->parallel_for(tasks, 1, [&](int64_t begin, int64_t end) {
      thread_local std::vector<float> weights;
      weights.resize(static_cast<size_t>(sh.cache_len));
      for (int64_t task = begin; task < end; ++task) {
        // task enumerates [batch, seq, query_heads] in row-major order, as q and out are laid out.
        const int64_t h = task % sh.query_heads;
        const int64_t s = (task / sh.query_heads) % sh.seq;
        const int64_t b = task / (sh.query_heads * sh.seq);
        float* out_head = out + task * sh.head_dim;
        const int64_t position = portable::load_index(positions, positions_dtype_, s);
        if (position < 0) {
          std::fill(out_head, out_head + sh.head_dim, 0.0f);
          continue;
        }
        const size_t cache_offset =
            static_cast<size_t>((b * sh.kv_heads + h / group) * sh.cache_len * sh.head_dim) * element;
        const int64_t slots = position + 1;
        fns_.scores(q + task * sh.head_dim, k_cache + cache_offset, cache_dtype_, slots, sh.head_dim, scale_,
                    weights.data());
        const float max_score = *std::max_element(weights.begin(), weights.begin() + slots);
        const float total = fns_.exp_shifted(weights.data(), slots, max_score);
        const float inverse = 1.0f / total;
        for (int64_t j = 0; j < slots; ++j) {
          weights[static_cast<size_t>(j)] *= inverse;
        }
        fns_.weighted_sum(weights.data(), v_cache + cache_offset, cache_dtype_, slots, sh.head_dim, out_head);
      }
    });
    return ok_status();
  }

 private:
  AttentionRowFns fns_;
  Shape4 shape_;
  float scale_;
  DType cache_dtype_;
  DType positions_dtype_;
};

}  // namespace

Result<std::unique_ptr<Kernel>> make_attention_kernel(const KernelSignature& signature, AttentionRowFns fns) {
  // The portable factory checks the signature and the scale attribute; this one takes what it takes.
  STATICLM_RETURN_IF_ERROR(portable::make_attention_kernel(signature).status());
  const TensorSpec& q = *signature.inputs[0];
  const TensorSpec& k = *signature.inputs[1];
  const Shape4 shape{q.shape[0], q.shape[1], q.shape[2], k.shape[1], k.shape[2], k.shape[3]};
  const double default_scale = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(1, shape.head_dim)));
  STATICLM_ASSIGN_OR_RETURN(double scale, signature.attributes.get_float_or("scale", default_scale));
  return std::make_unique<AttentionKernel>(fns, shape, static_cast<float>(scale), k.dtype, signature.inputs[3]->dtype);
}

}  // namespace staticlm::cpu
