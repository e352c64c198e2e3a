// The vector parts of the cpu attention, per ISA (attention_avx512.cpp, attention_avx2.cpp): the
// scores of one query against a run of cache rows, and the weighted sum of value rows. The
// softmax between them stays in the plain C++ caller (attention_kernel.cpp), which owns exp.
#pragma once

#include <cstdint>

#include "staticlm/core/dtype.h"

namespace staticlm::cpu {

struct AttentionRowFns {
  // scores[j] = scale * q . keys[j] for j in [0, rows); keys are `dim` wide, f32 or f16.
  void (*scores)(const float* q, const void* keys, DType cache_dtype, int64_t rows, int64_t dim, float scale,
                 float* scores) = nullptr;
  // out[d] = sum_j weights[j] * values[j][d].
  void (*weighted_sum)(const float* weights, const void* values, DType cache_dtype, int64_t rows, int64_t dim,
                       float* out) = nullptr;
  // The softmax's exponentials (elementwise_rows.h).
  float (*exp_shifted)(float* x, int64_t count, float shift) = nullptr;
};

// The entry points of each ISA file. Only their addresses are taken before the CPU is known to
// have the set (register.cpp): no code of those files runs before.
void attention_scores_avx512(const float* q, const void* keys, DType cache_dtype, int64_t rows, int64_t dim,
                             float scale, float* scores);
void attention_weighted_sum_avx512(const float* weights, const void* values, DType cache_dtype, int64_t rows,
                                   int64_t dim, float* out);
void attention_scores_avx2(const float* q, const void* keys, DType cache_dtype, int64_t rows, int64_t dim, float scale,
                           float* scores);
void attention_weighted_sum_avx2(const float* weights, const void* values, DType cache_dtype, int64_t rows, int64_t dim,
                                 float* out);

}  // namespace staticlm::cpu
