// SPDX-License-Identifier: Apache-2.0
// The AArch64 attention entry points (attention_rows.h's AttentionRowFns) for NEON, and its
// tiles' query count. Declarations only.
#pragma once

#include <cstdint>

#include "staticlm/backends/cpu/kernels/attention_rows.h"

namespace staticlm::cpu {

// Query vectors per tile of the NEON attention_tile (its file checks it).
inline constexpr int kTileQueriesNeon = 16;
static_assert(kTileQueriesNeon <= kMaxTileQueries);

void attention_scores_neon(const float* q, int64_t group, const void* keys, DType cache_dtype, int64_t rows,
                           int64_t dim, float scale, float* scores, int64_t stride);
void attention_weighted_sum_neon(const float* weights, int64_t stride, int64_t group, const void* values,
                                 DType cache_dtype, int64_t rows, int64_t dim, float* out);
void attention_softmax_neon(float* scores, int64_t group, int64_t count, int64_t stride, float* stats);
void attention_softcap_neon(float* x, int64_t count, float cap);
void attention_tile_neon(const AttentionTile& tile, const void* keys, const void* values, DType cache_dtype,
                         int64_t dim, float scale, float* scratch);

}  // namespace staticlm::cpu
