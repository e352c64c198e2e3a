// SPDX-License-Identifier: Apache-2.0
// The vector parts of the cpu attention, per ISA (x86/attention_avx512.cpp, ...): the scores of
// a GQA group's query heads against a run of cache rows, their softmax, and their weighted sums
// of value rows. Each cache row is loaded once for the whole group, so K and V are read once per
// group instead of once per query head.
#pragma once

#include <cstdint>

#include "staticlm/core/dtype.h"

namespace staticlm::cpu {

// The most query vectors a tile of any ISA's attention_tile holds.
inline constexpr int kMaxTileQueries = 32;

// A prefill tile: up to kMaxTileQueries query vectors of one kv head (several rows, each with the
// group's query heads), each attending the slots first[v] .. slots[v] - 1 of the rows it is handed
// (slots 0 for a padding row; first above 0 where a window starts past the first row), scores
// soft-capped to softcap * tanh(score / softcap) where softcap > 0.
struct AttentionTile {
  const float* q[kMaxTileQueries] = {};
  float* out[kMaxTileQueries] = {};
  int64_t slots[kMaxTileQueries] = {};
  int64_t first[kMaxTileQueries] = {};
  int count = 0;
  float softcap = 0.0f;
};

// Floats of scratch a tile of `slots` slots (the most of its queries') over `dim` needs: the
// queries and outputs transposed, the scores, and a block of 64 f16 rows widened.
inline int64_t attention_tile_scratch(int64_t slots, int64_t dim) {
  return (2 * dim + slots) * kMaxTileQueries + 64 * dim;
}

struct AttentionRowFns {
  // scores[g * stride + j] = scale * q_g . keys[j] for g < group and j < rows, where q_g is the
  // `dim` floats at q + g * dim and keys are rows of `dim` f32, f16 or q8_0 values.
  void (*scores)(const float* q, int64_t group, const void* keys, DType cache_dtype, int64_t rows, int64_t dim,
                 float scale, float* scores, int64_t stride) = nullptr;
  // out[g * dim + d] = sum_j weights[g * stride + j] * values[j][d] for g < group.
  void (*weighted_sum)(const float* weights, int64_t stride, int64_t group, const void* values, DType cache_dtype,
                       int64_t rows, int64_t dim, float* out) = nullptr;
  // Each head's count scores (at scores + g * stride, g < group) in place: exp(s - max) / sum;
  // with `stats` set, exp(s - max) left unnormalized and (max, sum) at stats[2g], stats[2g + 1].
  void (*softmax)(float* scores, int64_t group, int64_t count, int64_t stride, float* stats) = nullptr;
  // A tile's outputs (out[v][d] = softmax over its slots of scale * q_v . keys[j], times values)
  // as small GEMMs: the tile's queries transposed to [dim][vectors], so each key element is
  // broadcast against every query at once and the scores come out with no horizontal sums, the
  // softmax runs down the slots for every query in parallel, and each value element is broadcast
  // against every query's weights. `scratch` holds attention_tile_scratch floats.
  void (*tile)(const AttentionTile& tile, const void* keys, const void* values, DType cache_dtype, int64_t dim,
               float scale, float* scratch) = nullptr;
  // Query vectors per tile: the ISA's, at most kMaxTileQueries.
  int tile_queries = 0;
  // x[i] = cap * tanh(x[i] / cap) over `count` scores (the soft-cap of a decode run's scores).
  void (*softcap)(float* x, int64_t count, float cap) = nullptr;
};

}  // namespace staticlm::cpu
