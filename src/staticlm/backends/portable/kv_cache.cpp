// SPDX-License-Identifier: Apache-2.0
// kv_cache_update: writes row s of `rows` into slot positions[s] of every (batch, kv head) of
// the cache, converting to the cache dtype (q8_0: quantized per block of 32, element_access.h). Padding rows (negative
// positions) are skipped. All positions are checked before anything is written, so a failed call leaves the cache as it
// was. The output is the input cache itself when in_place = 1 (the runtime binds the same storage); otherwise the cache
// is first copied into the output.
#include <cstring>
#include <vector>

#include "staticlm/backends/portable/element_access.h"
#include "staticlm/backends/portable/kernel_factories.h"

namespace staticlm::portable {
namespace {

struct CacheShape {
  int64_t batch;
  int64_t kv_heads;
  int64_t cache_len;
  int64_t head_dim;
  int64_t seq;
};

class KvCacheUpdateKernel final : public Kernel {
 public:
  KvCacheUpdateKernel(const CacheShape& shape, DType cache_dtype, DType positions_dtype)
      : shape_(shape), cache_dtype_(cache_dtype), positions_dtype_(positions_dtype) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext&) const override {
    const CacheShape& sh = shape_;
    std::vector<int64_t> positions(static_cast<size_t>(sh.seq));
    for (int64_t s = 0; s < sh.seq; ++s) {
      positions[static_cast<size_t>(s)] = load_index(inputs[2].raw(), positions_dtype_, s);
      if (positions[static_cast<size_t>(s)] >= sh.cache_len) {
        return out_of_range("kv_cache_update: position ", positions[static_cast<size_t>(s)], " at row ", s,
                            " is outside the cache length ", sh.cache_len);
      }
    }
    // With in_place = 1 the runtime binds the output to the cache's storage; copying whenever
    // the two differ makes in_place = 0 (and a runtime that did not alias) correct too.
    if (outputs[0].raw() != inputs[0].raw()) {
      std::memcpy(outputs[0].raw(), inputs[0].raw(), static_cast<size_t>(inputs[0].nbytes()));
    }
    void* cache = outputs[0].raw();
    const float* rows = inputs[1].data<float>();
    for (int64_t b = 0; b < sh.batch; ++b) {
      for (int64_t s = 0; s < sh.seq; ++s) {
        const int64_t position = positions[static_cast<size_t>(s)];
        if (position < 0) {
          continue;
        }
        for (int64_t h = 0; h < sh.kv_heads; ++h) {
          const float* row = rows + ((b * sh.seq + s) * sh.kv_heads + h) * sh.head_dim;
          store_cache_row(row, cache_dtype_, cache, (b * sh.kv_heads + h) * sh.cache_len + position, sh.head_dim);
        }
      }
    }
    return ok_status();
  }

 private:
  CacheShape shape_;
  DType cache_dtype_;
  DType positions_dtype_;
};

}  // namespace

KernelResult make_kv_cache_update_kernel(const KernelSignature& signature) {
  STATICLM_RETURN_IF_ERROR(check_signature(signature, 3, 3));
  const TensorSpec& cache = *signature.inputs[0];
  const TensorSpec& rows = *signature.inputs[1];
  const TensorSpec& positions = *signature.inputs[2];
  if (!is_cache_storage_dtype(cache.dtype)) {
    return unimplemented("kv_cache_update: cache dtype ", dtype_name(cache.dtype),
                         " is not supported by the portable backend (expected f32, f16 or q8_0)");
  }
  const bool shapes_match = cache.shape.size() == 4 && rows.dtype == DType::kF32 && rows.shape.size() == 4 &&
                            rows.shape[0] == cache.shape[0] && rows.shape[2] == cache.shape[1] &&
                            rows.shape[3] == cache.shape[3] && is_index_dtype(positions.dtype) &&
                            positions.shape == Shape{rows.shape[1]} && signature.outputs[0] == cache;
  if (!shapes_match) {
    return invalid_argument("kv_cache_update: cache ", dtype_name(cache.dtype), shape_string(cache.shape), ", rows ",
                            dtype_name(rows.dtype), shape_string(rows.shape), " and positions ",
                            dtype_name(positions.dtype), shape_string(positions.shape),
                            " do not form a valid cache update");
  }
  auto in_place = signature.attributes.get_int_or("in_place", 1);
  if (!in_place.ok()) {
    return in_place.status().with_context("kv_cache_update");
  }
  if (*in_place != 0 && *in_place != 1) {
    return invalid_argument("kv_cache_update: attribute 'in_place': expected 0 or 1, found ", *in_place);
  }
  const CacheShape shape{cache.shape[0], cache.shape[1], cache.shape[2], cache.shape[3], rows.shape[1]};
  if (cache.dtype == DType::kQ8_0 && shape.head_dim % 32 != 0) {
    return invalid_argument("kv_cache_update: a q8_0 cache needs head_dim a multiple of 32, found ", shape.head_dim);
  }
  return std::make_unique<KvCacheUpdateKernel>(shape, cache.dtype, positions.dtype);
}

}  // namespace staticlm::portable
