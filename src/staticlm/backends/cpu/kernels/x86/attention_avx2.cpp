// SPDX-License-Identifier: Apache-2.0
// The cpu attention's score and weighted-sum rows for AVX2 with FMA and F16C.
#include <immintrin.h>

// Before the target pragma: the standard headers' inline functions (std::tanh) must not be
// compiled for this instruction set, or the linker may keep that copy for every caller.
#include <cmath>
#include <limits>
#include <type_traits>

#include "staticlm/backends/cpu/kernels/x86/attention_x86.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

#include "staticlm/backends/cpu/kernels/attention_rows_impl.h"
#include "staticlm/backends/cpu/kernels/x86/simd_avx2.h"

namespace staticlm::cpu {

static_assert(attention::kTileQueries<simd::Avx2> == kTileQueriesAvx2);

void attention_scores_avx2(const float* q, int64_t group, const void* keys, DType cache_dtype, int64_t rows,
                           int64_t dim, float scale, float* scores, int64_t stride) {
  attention::scores_any<simd::Avx2>(q, group, keys, cache_dtype, rows, dim, scale, scores, stride);
}

void attention_weighted_sum_avx2(const float* weights, int64_t stride, int64_t group, const void* values,
                                 DType cache_dtype, int64_t rows, int64_t dim, float* out) {
  attention::weighted_sum_any<simd::Avx2>(weights, stride, group, values, cache_dtype, rows, dim, out);
}

void attention_softmax_avx2(float* scores, int64_t group, int64_t count, int64_t stride, float* stats) {
  attention::softmax<simd::Avx2>(scores, group, count, stride, stats);
}

void attention_softcap_avx2(float* x, int64_t count, float cap) {
  attention::softcap_scores<simd::Avx2>(x, count, cap);
}

void attention_tile_avx2(const AttentionTile& tile, const void* keys, const void* values, DType cache_dtype,
                         int64_t dim, float scale, float* scratch) {
  attention::tile_any<simd::Avx2>(tile, keys, values, cache_dtype, dim, scale, scratch);
}

}  // namespace staticlm::cpu

#pragma GCC pop_options
