// SPDX-License-Identifier: Apache-2.0
// The cpu attention's score and weighted-sum rows for NEON.
#include "staticlm/backends/cpu/kernels/arm/attention_arm.h"
#include "staticlm/backends/cpu/kernels/arm/simd_neon.h"
#include "staticlm/backends/cpu/kernels/attention_rows_impl.h"

namespace staticlm::cpu {

static_assert(attention::kTileQueries<simd::Neon> == kTileQueriesNeon);

void attention_scores_neon(const float* q, int64_t group, const void* keys, DType cache_dtype, int64_t rows,
                           int64_t dim, float scale, float* scores, int64_t stride) {
  attention::scores_any<simd::Neon>(q, group, keys, cache_dtype, rows, dim, scale, scores, stride);
}

void attention_weighted_sum_neon(const float* weights, int64_t stride, int64_t group, const void* values,
                                 DType cache_dtype, int64_t rows, int64_t dim, float* out) {
  attention::weighted_sum_any<simd::Neon>(weights, stride, group, values, cache_dtype, rows, dim, out);
}

void attention_softmax_neon(float* scores, int64_t group, int64_t count, int64_t stride, float* stats) {
  attention::softmax<simd::Neon>(scores, group, count, stride, stats);
}

void attention_softcap_neon(float* x, int64_t count, float cap) {
  attention::softcap_scores<simd::Neon>(x, count, cap);
}

void attention_tile_neon(const AttentionTile& tile, const void* keys, const void* values, DType cache_dtype,
                         int64_t dim, float scale, float* scratch) {
  attention::tile_any<simd::Neon>(tile, keys, values, cache_dtype, dim, scale, scratch);
}

}  // namespace staticlm::cpu
