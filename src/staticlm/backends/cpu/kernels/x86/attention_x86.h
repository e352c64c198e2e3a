// SPDX-License-Identifier: Apache-2.0
// The x86 attention entry points (attention_rows.h's AttentionRowFns, one set per instruction set,
// each defined in a file compiled for that set alone) and their tiles' query counts.
// Declarations only: safe to include before a target pragma.
#pragma once

#include <cstdint>

#include "staticlm/backends/cpu/kernels/attention_rows.h"

namespace staticlm::cpu {

// Query vectors per tile of each ISA's attention_tile (its ISA file checks it).
inline constexpr int kTileQueriesAvx512 = 32;
inline constexpr int kTileQueriesAvx2 = 16;
static_assert(kTileQueriesAvx512 <= kMaxTileQueries && kTileQueriesAvx2 <= kMaxTileQueries);

// The entry points of each ISA file. Only their addresses are taken before the CPU is known to
// have the set (register_x86.cpp): no code of those files runs before.
void attention_scores_avx512(const float* q, int64_t group, const void* keys, DType cache_dtype, int64_t rows,
                             int64_t dim, float scale, float* scores, int64_t stride);
void attention_weighted_sum_avx512(const float* weights, int64_t stride, int64_t group, const void* values,
                                   DType cache_dtype, int64_t rows, int64_t dim, float* out);
void attention_softmax_avx512(float* scores, int64_t group, int64_t count, int64_t stride, float* stats);
void attention_softcap_avx512(float* x, int64_t count, float cap);
void attention_tile_avx512(const AttentionTile& tile, const void* keys, const void* values, DType cache_dtype,
                           int64_t dim, float scale, float* scratch);
void attention_scores_avx2(const float* q, int64_t group, const void* keys, DType cache_dtype, int64_t rows,
                           int64_t dim, float scale, float* scores, int64_t stride);
void attention_weighted_sum_avx2(const float* weights, int64_t stride, int64_t group, const void* values,
                                 DType cache_dtype, int64_t rows, int64_t dim, float* out);
void attention_softmax_avx2(float* scores, int64_t group, int64_t count, int64_t stride, float* stats);
void attention_softcap_avx2(float* x, int64_t count, float cap);
void attention_tile_avx2(const AttentionTile& tile, const void* keys, const void* values, DType cache_dtype,
                         int64_t dim, float scale, float* scratch);

}  // namespace staticlm::cpu
