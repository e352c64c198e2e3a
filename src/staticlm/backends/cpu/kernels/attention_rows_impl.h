// attention_rows.h's functions written once over an ISA traits type V; included by each ISA file
// after its target pragma and traits header, inside no namespace. Declarations only above it.
#pragma once

#include <cstdint>

#include "staticlm/backends/cpu/kernels/attention_rows.h"
#include "staticlm/backends/cpu/kernels/simd_tags.h"

namespace staticlm::cpu::attention {

template <class V, class T>
void scores(const float* q, const void* keys, int64_t rows, int64_t dim, float scale, float* out) {
  using Elem = typename T::Elem;
  const Elem* k = static_cast<const Elem*>(keys);
  for (int64_t j = 0; j < rows; ++j, k += dim) {
    typename V::Reg acc0 = V::zero(), acc1 = V::zero();
    int64_t d = 0;
    for (; d + 2 * V::kWidth <= dim; d += 2 * V::kWidth) {
      acc0 = V::fma(V::load(tiles::F32{}, q + d), V::load(T{}, k + d), acc0);
      acc1 = V::fma(V::load(tiles::F32{}, q + d + V::kWidth), V::load(T{}, k + d + V::kWidth), acc1);
    }
    for (; d < dim; d += V::kWidth) {
      const int rest = dim - d < V::kWidth ? static_cast<int>(dim - d) : V::kWidth;
      acc0 = V::fma(V::load_tail(tiles::F32{}, q + d, rest), V::load_tail(T{}, k + d, rest), acc0);
    }
    out[j] = scale * V::hsum(V::add(acc0, acc1));
  }
}

template <class V, class T>
void weighted_sum(const float* weights, const void* values, int64_t rows, int64_t dim, float* out) {
  using Elem = typename T::Elem;
  alignas(64) float lane[V::kWidth];
  for (int64_t d = 0; d < dim; d += V::kWidth) {
    const int rest = dim - d < V::kWidth ? static_cast<int>(dim - d) : V::kWidth;
    const Elem* v = static_cast<const Elem*>(values) + d;
    typename V::Reg acc0 = V::zero(), acc1 = V::zero();
    int64_t j = 0;
    for (; j + 2 <= rows; j += 2, v += 2 * dim) {
      const typename V::Reg v0 = rest == V::kWidth ? V::load(T{}, v) : V::load_tail(T{}, v, rest);
      const typename V::Reg v1 = rest == V::kWidth ? V::load(T{}, v + dim) : V::load_tail(T{}, v + dim, rest);
      acc0 = V::fma(V::broadcast(weights + j), v0, acc0);
      acc1 = V::fma(V::broadcast(weights + j + 1), v1, acc1);
    }
    if (j < rows) {
      acc0 = V::fma(V::broadcast(weights + j), rest == V::kWidth ? V::load(T{}, v) : V::load_tail(T{}, v, rest), acc0);
    }
    V::store(lane, V::add(acc0, acc1));
    for (int i = 0; i < rest; ++i) {
      out[d + i] = lane[i];
    }
  }
}

template <class V>
void scores_any(const float* q, const void* keys, DType cache_dtype, int64_t rows, int64_t dim, float scale,
                float* out) {
  if (cache_dtype == DType::kF16) {
    scores<V, tiles::F16>(q, keys, rows, dim, scale, out);
  } else {
    scores<V, tiles::F32>(q, keys, rows, dim, scale, out);
  }
}

template <class V>
void weighted_sum_any(const float* weights, const void* values, DType cache_dtype, int64_t rows, int64_t dim,
                      float* out) {
  if (cache_dtype == DType::kF16) {
    weighted_sum<V, tiles::F16>(weights, values, rows, dim, out);
  } else {
    weighted_sum<V, tiles::F32>(weights, values, rows, dim, out);
  }
}

}  // namespace staticlm::cpu::attention
