// SPDX-License-Identifier: Apache-2.0
// attention_rows.h's functions written once over an ISA traits type V; included by each ISA file
// after its target pragma and traits header, inside no namespace. Declarations only above it.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

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
// per score. D > 0: the head dimension is exactly D registers, so every row is read at a fixed
// offset from `k` (with `dim` at run time each of the block's rows kept its own pointer, more
// than the general registers hold, and the loop spilled them).
template <class V, class T, bool kFullBlock, int D>
typename V::Reg block_scores(const float* q, const typename T::Elem* k, int block, int64_t dim) {
  typename V::Reg acc[V::kWidth];
#pragma GCC unroll 16
  for (int i = 0; i < V::kWidth; ++i) {
    acc[i] = V::zero();
  }
  if constexpr (D > 0) {
#pragma GCC unroll 16
    for (int c = 0; c < D; ++c) {
      const typename V::Reg qv = V::load(tiles::F32{}, q + c * V::kWidth);
#pragma GCC unroll 16
      for (int i = 0; i < V::kWidth; ++i) {
        if (kFullBlock || i < block) {
          acc[i] = V::fma(qv, V::load(T{}, k + (i * D + c) * V::kWidth), acc[i]);
        }
      }
    }
  } else {
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
  }
  return V::sum_each(acc);
}

// Blocks of kWidth cache rows, each read into L1 once and scored by every query head of the group.
template <class V, class T, int D>
void scores_of(const float* q, int64_t group, const void* keys, int64_t rows, int64_t dim, float scale, float* out,
               int64_t stride) {
  using Elem = typename T::Elem;
  const typename V::Reg scale_v = V::set1(scale);
  int64_t j0 = 0;
  for (; j0 + V::kWidth <= rows; j0 += V::kWidth) {
    const Elem* k = static_cast<const Elem*>(keys) + j0 * dim;
    for (int64_t g = 0; g < group; ++g) {
      V::store(out + g * stride + j0, V::mul(block_scores<V, T, true, D>(q + g * dim, k, V::kWidth, dim), scale_v));
    }
  }
  if (j0 < rows) {
    const int block = static_cast<int>(rows - j0);
    const Elem* k = static_cast<const Elem*>(keys) + j0 * dim;
    for (int64_t g = 0; g < group; ++g) {
      V::store_tail(out + g * stride + j0, V::mul(block_scores<V, T, false, D>(q + g * dim, k, block, dim), scale_v),
                    block);
    }
  }
}

// Head dimensions of 4, 8 or 16 registers (64, 128, 256 floats on AVX-512; 32, 64, 128 on AVX2)
// at compile time.
template <class V, class T>
void scores(const float* q, int64_t group, const void* keys, int64_t rows, int64_t dim, float scale, float* out,
            int64_t stride) {
  const int64_t registers = dim % V::kWidth == 0 ? dim / V::kWidth : 0;
  switch (registers) {
    case 4: scores_of<V, T, 4>(q, group, keys, rows, dim, scale, out, stride); break;
    case 8: scores_of<V, T, 8>(q, group, keys, rows, dim, scale, out, stride); break;
    case 16: scores_of<V, T, 16>(q, group, keys, rows, dim, scale, out, stride); break;
    default: scores_of<V, T, 0>(q, group, keys, rows, dim, scale, out, stride); break;
  }
}

// G query heads over S registers of the head dimension from d: each value row's S registers are
// loaded once and multiply-added into every head's S accumulators. With one register at a time
// (S = 1) the G chains of SmolLM's 3-head group waited on the multiply-add latency.
template <class V, class T, int G, int S>
void weighted_sum_slice(const float* weights, int64_t stride, const void* values, int64_t rows, int64_t dim, int64_t d,
                        float* out) {
  const typename T::Elem* v = static_cast<const typename T::Elem*>(values) + d;
  typename V::Reg acc[G][S];
#pragma GCC unroll 16
  for (int g = 0; g < G; ++g) {
#pragma GCC unroll 4
    for (int c = 0; c < S; ++c) {
      acc[g][c] = V::zero();
    }
  }
  for (int64_t j = 0; j < rows; ++j, v += dim) {
    typename V::Reg vv[S];
#pragma GCC unroll 4
    for (int c = 0; c < S; ++c) {
      vv[c] = V::load(T{}, v + c * V::kWidth);
    }
#pragma GCC unroll 16
    for (int g = 0; g < G; ++g) {
      const typename V::Reg b = V::broadcast(weights + g * stride + j);
#pragma GCC unroll 4
      for (int c = 0; c < S; ++c) {
        acc[g][c] = V::fma(b, vv[c], acc[g][c]);
      }
    }
  }
#pragma GCC unroll 16
  for (int g = 0; g < G; ++g) {
#pragma GCC unroll 4
    for (int c = 0; c < S; ++c) {
      V::store(out + g * dim + d + c * V::kWidth, acc[g][c]);
    }
  }
}

// One pass of G query heads: the head dimension in slices of as many registers as G x S
// accumulators leave room for (V::kSumAccumulators), then a last partial register.
template <class V, class T, int G>
void weighted_sum_pass(const float* weights, int64_t stride, const void* values, int64_t rows, int64_t dim,
                       float* out) {
  using Elem = typename T::Elem;
  constexpr int kSlice = G * 4 <= V::kSumAccumulators ? 4 : (G * 2 <= V::kSumAccumulators ? 2 : 1);
  int64_t d = 0;
  for (; d + kSlice * V::kWidth <= dim; d += kSlice * V::kWidth) {
    weighted_sum_slice<V, T, G, kSlice>(weights, stride, values, rows, dim, d, out);
  }
  for (; d + V::kWidth <= dim; d += V::kWidth) {
    weighted_sum_slice<V, T, G, 1>(weights, stride, values, rows, dim, d, out);
  }
  if (d < dim) {
    const int rest = static_cast<int>(dim - d);
    const Elem* v = static_cast<const Elem*>(values) + d;
    typename V::Reg acc[G];
#pragma GCC unroll 16
    for (int g = 0; g < G; ++g) {
      acc[g] = V::zero();
    }
    for (int64_t j = 0; j < rows; ++j, v += dim) {
      const typename V::Reg vv = V::load_tail(T{}, v, rest);
#pragma GCC unroll 16
      for (int g = 0; g < G; ++g) {
        acc[g] = V::fma(V::broadcast(weights + g * stride + j), vv, acc[g]);
      }
    }
#pragma GCC unroll 16
    for (int g = 0; g < G; ++g) {
      V::store_tail(out + g * dim + d, acc[g], rest);
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

// The largest of count > 0 values, kWidth lanes at a time (a scalar max is one dependent chain,
// which shows in a short decode attention: attention_bench decode_*).
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

// Slots per block of key or value rows a tile reads at once (f16 rows widened into scratch).
inline constexpr int64_t kTileSlotBlock = 64;

// A q8_0 cache's rows (per row dim / 32 blocks of an f16 scale and 32 int8 codes; dim / 32 * 34
// bytes a row). A prefill tile reads them widened, by rows_f32; a decode run multiplies the codes
// in registers (q8_0_scores, q8_0_weighted_sum).
struct Q8_0Rows {
  using Elem = uint8_t;
};

inline constexpr int64_t kQ8_0BlockBytes = 34;

template <class V>
float q8_0_scale(const uint8_t* block) {
  uint16_t bits = 0;
  __builtin_memcpy(&bits, block, sizeof(bits));
  return V::f16_scalar(bits);
}

// Rows [j0, j0 + count) of a q8_0 cache run as f32 in `widened`: scale * code, the portable
// kernel's values exactly. A template, so that each ISA's file compiles its own copy.
template <class V>
const float* q8_0_rows_f32(const void* rows, int64_t j0, int64_t count, int64_t dim, float* widened) {
  const int64_t blocks = count * (dim / 32);
  const uint8_t* src = static_cast<const uint8_t*>(rows) + j0 * (dim / 32) * kQ8_0BlockBytes;
  for (int64_t b = 0; b < blocks; ++b, src += kQ8_0BlockBytes) {
    const typename V::Reg scale = V::set1(q8_0_scale<V>(src));
    const auto* codes = reinterpret_cast<const int8_t*>(src + 2);
    float* out = widened + b * 32;
#pragma GCC unroll 8
    for (int j = 0; j < 32; j += V::kWidth) {
      V::store(out + j, V::mul(scale, V::widen_i8(codes + j)));
    }
  }
  return widened;
}

// scores[g * stride + j] = scale * q_g . row j over q8_0 rows: per row and block, the codes'
// products with q summed in a register and scaled by the block's scale; rows in blocks of kWidth
// summed lane-wise (V::sum_each), as scores_of does for f32 and f16 rows.
template <class V>
void q8_0_scores(const float* q, int64_t group, const void* keys, int64_t rows, int64_t dim, float scale, float* out,
                 int64_t stride) {
  constexpr int W = V::kWidth;
  constexpr int R = 32 / W;  // registers per block
  const int64_t blocks = dim / 32;
  const int64_t row_bytes = blocks * kQ8_0BlockBytes;
  const typename V::Reg scale_v = V::set1(scale);
  for (int64_t j0 = 0; j0 < rows; j0 += W) {
    const int count = rows - j0 < W ? static_cast<int>(rows - j0) : W;
    const uint8_t* first = static_cast<const uint8_t*>(keys) + j0 * row_bytes;
    for (int64_t g = 0; g < group; ++g) {
      const float* qg = q + g * dim;
      typename V::Reg acc[W];
#pragma GCC unroll 16
      for (int i = 0; i < W; ++i) {
        acc[i] = V::zero();
      }
      // Unrolled over the block's rows, so that acc[i] stays a register.
#pragma GCC unroll 16
      for (int i = 0; i < W; ++i) {
        if (i < count) {
          const uint8_t* block = first + i * row_bytes;
          for (int64_t b = 0; b < blocks; ++b, block += kQ8_0BlockBytes) {
            const auto* codes = reinterpret_cast<const int8_t*>(block + 2);
            typename V::Reg sum = V::zero();
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
              sum = V::fma(V::load(tiles::F32{}, qg + b * 32 + r * W), V::widen_i8(codes + r * W), sum);
            }
            acc[i] = V::fma(sum, V::set1(q8_0_scale<V>(block)), acc[i]);
          }
        }
      }
      const typename V::Reg scores = V::mul(V::sum_each(acc), scale_v);
      if (count == W) {
        V::store(out + g * stride + j0, scores);
      } else {
        V::store_tail(out + g * stride + j0, scores, count);
      }
    }
  }
}

// Rows a weighted-sum pass takes before it moves to the next block of columns: a chunk's rows
// (64 x 34 bytes per block of a row, 17 KiB at head_dim 256) stay in L1 while every block of
// columns goes over them, so a run's rows are read from memory once.
inline constexpr int64_t kQ8_0SumRows = 64;

// G heads of out[g * dim + d] = sum_j weights[g * stride + j] * row j over q8_0 rows, in chunks of
// kQ8_0SumRows rows and within a chunk a block of 32 columns at a time: each row's block widened
// in R registers once for the G heads, each head's weight multiplied by the block's scale.
template <class V, int G>
void q8_0_weighted_sum_pass(const float* weights, int64_t stride, const void* values, int64_t rows, int64_t dim,
                            float* out) {
  constexpr int W = V::kWidth;
  constexpr int R = 32 / W;
  const int64_t blocks = dim / 32;
  const int64_t row_bytes = blocks * kQ8_0BlockBytes;
  for (int64_t j0 = 0; j0 < rows; j0 += kQ8_0SumRows) {
    const int64_t j1 = rows - j0 < kQ8_0SumRows ? rows : j0 + kQ8_0SumRows;
    for (int64_t b = 0; b < blocks; ++b) {
      typename V::Reg acc[G][R];
#pragma GCC unroll 8
      for (int g = 0; g < G; ++g) {
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          acc[g][r] = j0 == 0 ? V::zero() : V::load(tiles::F32{}, out + g * dim + b * 32 + r * W);
        }
      }
      const uint8_t* block = static_cast<const uint8_t*>(values) + j0 * row_bytes + b * kQ8_0BlockBytes;
      for (int64_t j = j0; j < j1; ++j, block += row_bytes) {
        const auto* codes = reinterpret_cast<const int8_t*>(block + 2);
        const float block_scale = q8_0_scale<V>(block);
        typename V::Reg vv[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          vv[r] = V::widen_i8(codes + r * W);
        }
#pragma GCC unroll 8
        for (int g = 0; g < G; ++g) {
          const typename V::Reg coefficient = V::set1(weights[g * stride + j] * block_scale);
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r) {
            acc[g][r] = V::fma(coefficient, vv[r], acc[g][r]);
          }
        }
      }
#pragma GCC unroll 8
      for (int g = 0; g < G; ++g) {
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          V::store(out + g * dim + b * 32 + r * W, acc[g][r]);
        }
      }
    }
  }
}

template <class V>
void q8_0_weighted_sum(const float* weights, int64_t stride, int64_t group, const void* values, int64_t rows,
                       int64_t dim, float* out) {
  // As many heads a pass as G x R accumulators leave room for (R = 32 / kWidth per block).
  constexpr int64_t kPass = V::kSumAccumulators / (32 / V::kWidth) >= 4 ? 4 : 2;
  for (int64_t g0 = 0; g0 < group; g0 += kPass) {
    const float* w = weights + g0 * stride;
    float* o = out + g0 * dim;
    const int64_t heads = group - g0 < kPass ? group - g0 : kPass;
    switch (heads) {
      case 1: q8_0_weighted_sum_pass<V, 1>(w, stride, values, rows, dim, o); break;
      case 2: q8_0_weighted_sum_pass<V, 2>(w, stride, values, rows, dim, o); break;
      case 3: q8_0_weighted_sum_pass<V, 3>(w, stride, values, rows, dim, o); break;
      default: q8_0_weighted_sum_pass<V, 4>(w, stride, values, rows, dim, o); break;
    }
  }
}

// Rows [j0, j0 + count) of a cache run as f32: f32 rows where they are, f16 and q8_0 ones widened.
template <class V, class T>
const float* rows_f32(const void* rows, int64_t j0, int64_t count, int64_t dim, float* widened) {
  if constexpr (std::is_same_v<T, Q8_0Rows>) {
    return q8_0_rows_f32<V>(rows, j0, count, dim, widened);
  } else if constexpr (sizeof(typename T::Elem) == sizeof(float)) {
    return static_cast<const float*>(rows) + j0 * dim;
  } else {
    const typename T::Elem* src = static_cast<const typename T::Elem*>(rows) + j0 * dim;
    int64_t i = 0;
    for (; i + V::kWidth <= count * dim; i += V::kWidth) {
      V::store(widened + i, V::load(T{}, src + i));
    }
    for (; i < count * dim; ++i) {
      alignas(64) float lane[V::kWidth];
      V::store(lane, V::load_tail(T{}, src + i, 1));
      widened[i] = lane[0];
    }
    return widened;
  }
}

// A tile's queries: V::kTileRegs registers of them, kTileQueries in all. Both ISAs take two
// registers (16 queries on AVX2, 32 on AVX-512): each key or value element then feeds two
// multiply-adds, and a group's K / V rows are read once per two registers of queries. With one
// register, AVX-512's tiles loaded as often as they multiplied (attention_bench prefill_*).
template <class V>
inline constexpr int kTileQueries = (V::kWidth * V::kTileRegs);

// Slots (scores) or dimensions (outputs) a tile keeps in registers at once (V::kTileSteps x
// kTileRegs accumulators, beside the queries' registers and a broadcast: 6 x 2 of AVX2's 16
// registers, 8 x 2 of AVX-512's 32).
template <class V>
inline constexpr int kTileSteps = V::kTileSteps;

// st[j][v] = qt[.][v] . keys[j] for j < slots: each key element broadcast against every query.
template <class V, class T>
void tile_scores(const float* qt, const void* keys, int64_t slots, int64_t dim, float* st, float* widened) {
  using Reg = typename V::Reg;
  constexpr int W = V::kWidth;
  constexpr int R = V::kTileRegs;
  constexpr int Q = kTileQueries<V>;
  constexpr int S = kTileSteps<V>;
  for (int64_t j0 = 0; j0 < slots; j0 += kTileSlotBlock) {
    const int64_t nb = slots - j0 < kTileSlotBlock ? slots - j0 : kTileSlotBlock;
    const float* k = rows_f32<V, T>(keys, j0, nb, dim, widened);
    int64_t j = 0;
    for (; j + S <= nb; j += S) {
      Reg acc[S][R];
#pragma GCC unroll 16
      for (int s = 0; s < S; ++s) {
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          acc[s][r] = V::zero();
        }
      }
      for (int64_t d = 0; d < dim; ++d) {
        Reg qv[R];
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          qv[r] = V::load(tiles::F32{}, qt + d * Q + r * W);
        }
#pragma GCC unroll 16
        for (int s = 0; s < S; ++s) {
          const Reg b = V::broadcast(k + (j + s) * dim + d);
#pragma GCC unroll 4
          for (int r = 0; r < R; ++r) {
            acc[s][r] = V::fma(b, qv[r], acc[s][r]);
          }
        }
      }
#pragma GCC unroll 16
      for (int s = 0; s < S; ++s) {
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          V::store(st + (j0 + j + s) * Q + r * W, acc[s][r]);
        }
      }
    }
    for (; j < nb; ++j) {
      Reg acc[R];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        acc[r] = V::zero();
      }
      for (int64_t d = 0; d < dim; ++d) {
        const Reg b = V::broadcast(k + j * dim + d);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          acc[r] = V::fma(b, V::load(tiles::F32{}, qt + d * Q + r * W), acc[r]);
        }
      }
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        V::store(st + (j0 + j) * Q + r * W, acc[r]);
      }
    }
  }
}

// Each query's scores (a lane of st) into its unnormalized weights, down the slots for every
// query at once; writes the sums to `sums`. Slots outside a query's own (before its first, from
// its last on) are masked out of its max; lanes with no slots (padding, or past the tile's queries)
// hold zeros, so nothing turns into NaN.
template <class V>
void tile_softmax(const AttentionTile& t, int64_t slots, float* st, float* sums) {
  using Reg = typename V::Reg;
  constexpr int W = V::kWidth;
  constexpr int Q = kTileQueries<V>;
  for (int v = 0; v < Q; ++v) {
    const int64_t own = v < t.count && t.slots[v] > 0 ? t.slots[v] : 0;
    const float fill = own > 0 ? -std::numeric_limits<float>::infinity() : 0.0f;
    for (int64_t j = own; j < slots; ++j) {
      st[j * Q + v] = fill;
    }
    for (int64_t j = 0; own > 0 && j < t.first[v]; ++j) {
      st[j * Q + v] = fill;
    }
  }
  for (int r = 0; r < V::kTileRegs; ++r) {
    float* lanes = st + r * W;
    Reg top = V::load(tiles::F32{}, lanes);
    for (int64_t j = 1; j < slots; ++j) {
      top = V::max(top, V::load(tiles::F32{}, lanes + j * Q));
    }
    Reg total = V::zero();
    for (int64_t j = 0; j < slots; ++j) {
      const Reg e = elementwise::exp<V>(V::sub(V::load(tiles::F32{}, lanes + j * Q), top));
      V::store(lanes + j * Q, e);
      total = V::add(total, e);
    }
    V::store(sums + r * W, total);
  }
  // The vector exp clamps its argument, so a masked slot came out about 1e-38: exactly zero, as
  // the portable kernel gives it.
  for (int v = 0; v < t.count; ++v) {
    for (int64_t j = t.slots[v] > 0 ? t.slots[v] : slots; j < slots; ++j) {
      st[j * Q + v] = 0.0f;
    }
    for (int64_t j = 0; t.slots[v] > 0 && j < t.first[v]; ++j) {
      st[j * Q + v] = 0.0f;
    }
  }
}

// x = cap * tanh(x / cap) over `count` scores: Gemma 2's attention soft-cap, by the vector tanh
// of the softcap op (within 5e-7 of std::tanh, elementwise_impl.h) rather than a libm call per
// score.
template <class V>
void softcap_scores(float* x, int64_t count, float cap) {
  elementwise::softcap<V>(x, cap, x, count);
}

// ot[d][v] = sum_j st[j][v] * values[j][d]: each value element broadcast against every query's
// weights.
template <class V, class T>
void tile_outputs(const float* st, const void* values, int64_t slots, int64_t dim, float* ot, float* widened) {
  using Reg = typename V::Reg;
  constexpr int W = V::kWidth;
  constexpr int R = V::kTileRegs;
  constexpr int Q = kTileQueries<V>;
  constexpr int S = kTileSteps<V>;
  for (int64_t i = 0; i < dim * Q; i += W) {
    V::store(ot + i, V::zero());
  }
  for (int64_t j0 = 0; j0 < slots; j0 += kTileSlotBlock) {
    const int64_t nb = slots - j0 < kTileSlotBlock ? slots - j0 : kTileSlotBlock;
    const float* vr = rows_f32<V, T>(values, j0, nb, dim, widened);
    int64_t d0 = 0;
    for (; d0 + S <= dim; d0 += S) {
      Reg acc[S][R];
#pragma GCC unroll 16
      for (int s = 0; s < S; ++s) {
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          acc[s][r] = V::load(tiles::F32{}, ot + (d0 + s) * Q + r * W);
        }
      }
      for (int64_t j = 0; j < nb; ++j) {
        Reg w[R];
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          w[r] = V::load(tiles::F32{}, st + (j0 + j) * Q + r * W);
        }
#pragma GCC unroll 16
        for (int s = 0; s < S; ++s) {
          const Reg b = V::broadcast(vr + j * dim + d0 + s);
#pragma GCC unroll 4
          for (int r = 0; r < R; ++r) {
            acc[s][r] = V::fma(b, w[r], acc[s][r]);
          }
        }
      }
#pragma GCC unroll 16
      for (int s = 0; s < S; ++s) {
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          V::store(ot + (d0 + s) * Q + r * W, acc[s][r]);
        }
      }
    }
    for (; d0 < dim; ++d0) {
      Reg acc[R];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        acc[r] = V::load(tiles::F32{}, ot + d0 * Q + r * W);
      }
      for (int64_t j = 0; j < nb; ++j) {
        const Reg b = V::broadcast(vr + j * dim + d0);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          acc[r] = V::fma(b, V::load(tiles::F32{}, st + (j0 + j) * Q + r * W), acc[r]);
        }
      }
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        V::store(ot + d0 * Q + r * W, acc[r]);
      }
    }
  }
}

// qt[d][v] = scale * t.q[v][d] (zeros past the tile's queries), kWidth x kWidth blocks at a
// time transposed in registers: element by element, the transposes of the queries and of the
// outputs were a large part of a prefill tile's time (attention_bench prefill_*).
template <class V>
void transpose_queries(const AttentionTile& t, int64_t dim, float scale, float* qt) {
  constexpr int W = V::kWidth;
  constexpr int Q = kTileQueries<V>;
  const typename V::Reg scale_v = V::set1(scale);
  for (int v0 = 0; v0 < Q; v0 += W) {
    for (int64_t d0 = 0; d0 < dim; d0 += W) {
      const int rest = dim - d0 < W ? static_cast<int>(dim - d0) : W;
      typename V::Reg r[W];
#pragma GCC unroll 16
      for (int i = 0; i < W; ++i) {
        const float* q = v0 + i < t.count ? t.q[v0 + i] + d0 : nullptr;
        r[i] = q == nullptr ? V::zero() : (rest == W ? V::load(tiles::F32{}, q) : V::load_tail(tiles::F32{}, q, rest));
      }
      V::transpose(r);
#pragma GCC unroll 16
      for (int i = 0; i < W; ++i) {
        if (i < rest) {
          V::store(qt + (d0 + i) * Q + v0, V::mul(r[i], scale_v));
        }
      }
    }
  }
}

// t.out[v][d] = ot[d][v] / sums[v] for the tile's queries (zeros for a padding row's), in
// kWidth x kWidth blocks transposed in registers.
template <class V>
void transpose_outputs(const AttentionTile& t, const float* ot, int64_t dim, const float* sums) {
  constexpr int W = V::kWidth;
  constexpr int Q = kTileQueries<V>;
  for (int v0 = 0; v0 < t.count; v0 += W) {
    for (int64_t d0 = 0; d0 < dim; d0 += W) {
      const int rest = dim - d0 < W ? static_cast<int>(dim - d0) : W;
      typename V::Reg r[W];
#pragma GCC unroll 16
      for (int i = 0; i < W; ++i) {
        r[i] = i < rest ? V::load(tiles::F32{}, ot + (d0 + i) * Q + v0) : V::zero();
      }
      V::transpose(r);
#pragma GCC unroll 16
      for (int i = 0; i < W; ++i) {
        const int v = v0 + i;
        if (v < t.count) {
          const float inverse = t.slots[v] > 0 ? 1.0f / sums[v] : 0.0f;  // a padding row's output is zeros
          const typename V::Reg scaled = V::mul(r[i], V::set1(inverse));
          if (rest == W) {
            V::store(t.out[v] + d0, scaled);
          } else {
            V::store_tail(t.out[v] + d0, scaled, rest);
          }
        }
      }
    }
  }
}

template <class V, class T>
void tile(const AttentionTile& t, const void* keys, const void* values, int64_t dim, float scale, float* scratch) {
  constexpr int Q = kTileQueries<V>;
  static_assert(Q <= kMaxTileQueries);
  int64_t slots = 0;
  for (int v = 0; v < t.count; ++v) {
    slots = t.slots[v] > slots ? t.slots[v] : slots;
  }
  float* const qt = scratch;            // [dim][Q]: the queries, scaled, transposed
  float* const st = qt + dim * Q;       // [slots][Q]: scores, then weights
  float* const ot = st + slots * Q;     // [dim][Q]: the outputs, transposed
  float* const widened = ot + dim * Q;  // [kTileSlotBlock][dim]
  transpose_queries<V>(t, dim, scale, qt);
  tile_scores<V, T>(qt, keys, slots, dim, st, widened);
  if (t.softcap > 0.0f) {
    softcap_scores<V>(st, slots * Q, t.softcap);
  }
  alignas(64) float sums[Q];
  tile_softmax<V>(t, slots, st, sums);
  tile_outputs<V, T>(st, values, slots, dim, ot, widened);
  transpose_outputs<V>(t, ot, dim, sums);
}

template <class V>
void tile_any(const AttentionTile& t, const void* keys, const void* values, DType cache_dtype, int64_t dim, float scale,
              float* scratch) {
  if (cache_dtype == DType::kQ8_0) {
    tile<V, Q8_0Rows>(t, keys, values, dim, scale, scratch);
  } else if (cache_dtype == DType::kF16) {
    tile<V, tiles::F16>(t, keys, values, dim, scale, scratch);
  } else {
    tile<V, tiles::F32>(t, keys, values, dim, scale, scratch);
  }
}

template <class V>
void scores_any(const float* q, int64_t group, const void* keys, DType cache_dtype, int64_t rows, int64_t dim,
                float scale, float* out, int64_t stride) {
  if (cache_dtype == DType::kQ8_0) {
    q8_0_scores<V>(q, group, keys, rows, dim, scale, out, stride);
  } else if (cache_dtype == DType::kF16) {
    scores<V, tiles::F16>(q, group, keys, rows, dim, scale, out, stride);
  } else {
    scores<V, tiles::F32>(q, group, keys, rows, dim, scale, out, stride);
  }
}

template <class V>
void weighted_sum_any(const float* weights, int64_t stride, int64_t group, const void* values, DType cache_dtype,
                      int64_t rows, int64_t dim, float* out) {
  if (cache_dtype == DType::kQ8_0) {
    q8_0_weighted_sum<V>(weights, stride, group, values, rows, dim, out);
  } else if (cache_dtype == DType::kF16) {
    weighted_sum<V, tiles::F16>(weights, stride, group, values, rows, dim, out);
  } else {
    weighted_sum<V, tiles::F32>(weights, stride, group, values, rows, dim, out);
  }
}

}  // namespace staticlm::cpu::attention
