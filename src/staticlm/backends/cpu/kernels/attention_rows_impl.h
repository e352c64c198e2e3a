// attention_rows.h's functions written once over an ISA traits type V; included by each ISA file
// after its target pragma and traits header, inside no namespace. Declarations only above it.
#pragma once

#include <cstdint>
#include <limits>

#include "staticlm/backends/cpu/kernels/attention_rows.h"
#include "staticlm/backends/cpu/kernels/elementwise_impl.h"
#include "staticlm/backends/cpu/kernels/simd_tags.h"

namespace staticlm::cpu::attention {

// Query heads per pass over the cache rows: each weighted-sum pass holds one accumulator per
// head. A larger group runs in passes of this many.
inline constexpr int64_t kMaxPass = 8;

// The scores of one block of BLOCK <= kWidth cache rows for one query head: each row's products
// summed in one register along the head dimension, then the block's registers summed lane-wise
// into one (V::sum_each), so the block costs one tree of shuffles instead of a horizontal sum
// per score.
template <class V, class T, bool kFullBlock>
typename V::Reg block_scores(const float* q, const typename T::Elem* k, int block, int64_t dim) {
  typename V::Reg acc[V::kWidth];
#pragma GCC unroll 16
  for (int i = 0; i < V::kWidth; ++i) {
    acc[i] = V::zero();
  }
  for (int64_t d = 0; d < dim; d += V::kWidth) {
    const int rest = dim - d < V::kWidth ? static_cast<int>(dim - d) : V::kWidth;
    const bool full = rest == V::kWidth;
    const typename V::Reg qv = full ? V::load(tiles::F32{}, q + d) : V::load_tail(tiles::F32{}, q + d, rest);
#pragma GCC unroll 16
    for (int i = 0; i < V::kWidth; ++i) {
      if (kFullBlock || i < block) {
        const typename T::Elem* row = k + i * dim + d;
        acc[i] = V::fma(qv, full ? V::load(T{}, row) : V::load_tail(T{}, row, rest), acc[i]);
      }
    }
  }
  return V::sum_each(acc);
}

// Blocks of kWidth cache rows, each read into L1 once and scored by every query head of the group.
template <class V, class T>
void scores(const float* q, int64_t group, const void* keys, int64_t rows, int64_t dim, float scale, float* out,
            int64_t stride) {
  using Elem = typename T::Elem;
  const typename V::Reg scale_v = V::set1(scale);
  int64_t j0 = 0;
  for (; j0 + V::kWidth <= rows; j0 += V::kWidth) {
    const Elem* k = static_cast<const Elem*>(keys) + j0 * dim;
    for (int64_t g = 0; g < group; ++g) {
      V::store(out + g * stride + j0, V::mul(block_scores<V, T, true>(q + g * dim, k, V::kWidth, dim), scale_v));
    }
  }
  if (j0 < rows) {
    const int block = static_cast<int>(rows - j0);
    const Elem* k = static_cast<const Elem*>(keys) + j0 * dim;
    for (int64_t g = 0; g < group; ++g) {
      V::store_tail(out + g * stride + j0, V::mul(block_scores<V, T, false>(q + g * dim, k, block, dim), scale_v),
                    block);
    }
  }
}

// One pass of G query heads: per slice of kWidth along the head dimension, each value row's
// slice is loaded once and multiply-added into every head's accumulator.
template <class V, class T, int G>
void weighted_sum_pass(const float* weights, int64_t stride, const void* values, int64_t rows, int64_t dim,
                       float* out) {
  using Elem = typename T::Elem;
  for (int64_t d = 0; d < dim; d += V::kWidth) {
    const int rest = dim - d < V::kWidth ? static_cast<int>(dim - d) : V::kWidth;
    const Elem* v = static_cast<const Elem*>(values) + d;
    typename V::Reg acc[G];
#pragma GCC unroll 16
    for (int g = 0; g < G; ++g) {
      acc[g] = V::zero();
    }
    for (int64_t j = 0; j < rows; ++j, v += dim) {
      const typename V::Reg vv = rest == V::kWidth ? V::load(T{}, v) : V::load_tail(T{}, v, rest);
#pragma GCC unroll 16
      for (int g = 0; g < G; ++g) {
        acc[g] = V::fma(V::broadcast(weights + g * stride + j), vv, acc[g]);
      }
    }
#pragma GCC unroll 16
    for (int g = 0; g < G; ++g) {
      if (rest == V::kWidth) {
        V::store(out + g * dim + d, acc[g]);
      } else {
        V::store_tail(out + g * dim + d, acc[g], rest);
      }
    }
  }
}

template <class V, class T>
void weighted_sum(const float* weights, int64_t stride, int64_t group, const void* values, int64_t rows, int64_t dim,
                  float* out) {
  for (int64_t g0 = 0; g0 < group; g0 += kMaxPass) {
    const float* w = weights + g0 * stride;
    float* o = out + g0 * dim;
    switch (group - g0 < kMaxPass ? group - g0 : kMaxPass) {
      case 1: weighted_sum_pass<V, T, 1>(w, stride, values, rows, dim, o); break;
      case 2: weighted_sum_pass<V, T, 2>(w, stride, values, rows, dim, o); break;
      case 3: weighted_sum_pass<V, T, 3>(w, stride, values, rows, dim, o); break;
      case 4: weighted_sum_pass<V, T, 4>(w, stride, values, rows, dim, o); break;
      case 5: weighted_sum_pass<V, T, 5>(w, stride, values, rows, dim, o); break;
      case 6: weighted_sum_pass<V, T, 6>(w, stride, values, rows, dim, o); break;
      case 7: weighted_sum_pass<V, T, 7>(w, stride, values, rows, dim, o); break;
      default: weighted_sum_pass<V, T, 8>(w, stride, values, rows, dim, o); break;
    }
  }
}

// The largest of count > 0 values, kWidth lanes at a time (a scalar max is one dependent chain:
// it was a fifth of a short decode attention).
template <class V>
float row_max(const float* x, int64_t count) {
  alignas(64) float lanes[V::kWidth];
  int64_t i = 0;
  float top = -std::numeric_limits<float>::infinity();
  if (count >= V::kWidth) {
    typename V::Reg m = V::load(tiles::F32{}, x);
    for (i = V::kWidth; i + V::kWidth <= count; i += V::kWidth) {
      m = V::max(m, V::load(tiles::F32{}, x + i));
    }
    V::store(lanes, m);
    for (float lane : lanes) {
      top = lane > top ? lane : top;
    }
  }
  for (; i < count; ++i) {
    top = x[i] > top ? x[i] : top;
  }
  return top;
}

template <class V>
void softmax(float* scores, int64_t group, int64_t count, int64_t stride, float* stats) {
  for (int64_t g = 0; g < group; ++g) {
    float* w = scores + g * stride;
    const float top = row_max<V>(w, count);
    const float total = elementwise::exp_shifted<V>(w, count, top);
    if (stats != nullptr) {
      stats[2 * g] = top;
      stats[2 * g + 1] = total;
      continue;
    }
    const typename V::Reg inverse = V::set1(1.0f / total);
    int64_t i = 0;
    for (; i + V::kWidth <= count; i += V::kWidth) {
      V::store(w + i, V::mul(V::load(tiles::F32{}, w + i), inverse));
    }
    if (i < count) {
      const int rest = static_cast<int>(count - i);
      V::store_tail(w + i, V::mul(V::load_tail(tiles::F32{}, w + i, rest), inverse), rest);
    }
  }
}

template <class V>
void scores_any(const float* q, int64_t group, const void* keys, DType cache_dtype, int64_t rows, int64_t dim,
                float scale, float* out, int64_t stride) {
  if (cache_dtype == DType::kF16) {
    scores<V, tiles::F16>(q, group, keys, rows, dim, scale, out, stride);
  } else {
    scores<V, tiles::F32>(q, group, keys, rows, dim, scale, out, stride);
  }
}

template <class V>
void weighted_sum_any(const float* weights, int64_t stride, int64_t group, const void* values, DType cache_dtype,
                      int64_t rows, int64_t dim, float* out) {
  if (cache_dtype == DType::kF16) {
    weighted_sum<V, tiles::F16>(weights, stride, group, values, rows, dim, out);
  } else {
    weighted_sum<V, tiles::F32>(weights, stride, group, values, rows, dim, out);
  }
}

}  // namespace staticlm::cpu::attention
