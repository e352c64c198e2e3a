// The vector parts of the cpu attention, per ISA (attention_avx512.cpp, attention_avx2.cpp): the
// scores of a GQA group's query heads against a run of cache rows, their softmax, and their
// weighted sums of value rows. Each cache row is loaded once for the whole group, so K and V are
// read once per group instead of once per query head.
#pragma once

#include <cstdint>

#include "staticlm/core/dtype.h"

namespace staticlm::cpu {

struct AttentionRowFns {
  // scores[g * stride + j] = scale * q_g . keys[j] for g < group and j < rows, where q_g is the
  // `dim` floats at q + g * dim and keys are rows of `dim` f32 or f16 values.
  void (*scores)(const float* q, int64_t group, const void* keys, DType cache_dtype, int64_t rows, int64_t dim,
                 float scale, float* scores, int64_t stride) = nullptr;
  // out[g * dim + d] = sum_j weights[g * stride + j] * values[j][d] for g < group.
  void (*weighted_sum)(const float* weights, int64_t stride, int64_t group, const void* values, DType cache_dtype,
                       int64_t rows, int64_t dim, float* out) = nullptr;
  // Each head's count scores (at scores + g * stride, g < group) in place: exp(s - max) / sum;
  // with `stats` set, exp(s - max) left unnormalized and (max, sum) at stats[2g], stats[2g + 1].
  void (*softmax)(float* scores, int64_t group, int64_t count, int64_t stride, float* stats) = nullptr;
};

// The entry points of each ISA file. Only their addresses are taken before the CPU is known to
// have the set (register.cpp): no code of those files runs before.
void attention_scores_avx512(const float* q, int64_t group, const void* keys, DType cache_dtype, int64_t rows,
                             int64_t dim, float scale, float* scores, int64_t stride);
void attention_weighted_sum_avx512(const float* weights, int64_t stride, int64_t group, const void* values,
                                   DType cache_dtype, int64_t rows, int64_t dim, float* out);
void attention_softmax_avx512(float* scores, int64_t group, int64_t count, int64_t stride, float* stats);
void attention_scores_avx2(const float* q, int64_t group, const void* keys, DType cache_dtype, int64_t rows,
                           int64_t dim, float scale, float* scores, int64_t stride);
void attention_weighted_sum_avx2(const float* weights, int64_t stride, int64_t group, const void* values,
                                 DType cache_dtype, int64_t rows, int64_t dim, float* out);
void attention_softmax_avx2(float* scores, int64_t group, int64_t count, int64_t stride, float* stats);

}  // namespace staticlm::cpu
