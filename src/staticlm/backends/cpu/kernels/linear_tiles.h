// The linear tiles, written once over an instruction-set traits type V and instantiated by each
// ISA file after its target pragma (linear_avx512.cpp, linear_avx2.cpp), so each copy is compiled
// for its own set. Include it only there, after the pragma and inside no namespace.
//
// V provides: Reg, kWidth (floats per Reg), kTileRows (rows of x per tile), zero(), fma(a, b, c)
// = a * b + c, add(a, b), hsum(r), broadcast(p) (*p in every lane), store(p, r), transpose(r) (a
// kWidth x kWidth block of registers), kPanelRows (rows
// of the packed GEMM's micro-kernel), load(T{}, p) and load_tail(T{}, p, n) for T in F32 / F16 / Bf16 (n < kWidth
// elements, the rest zero). Loops over a tile's registers carry `#pragma GCC unroll`: at -O2 g++
// would otherwise keep the accumulators in memory. It includes only declarations: anything inline defined after the
// pragma would be compiled for the ISA and could be merged into callers that run anywhere.
#pragma once

#include <cstdint>

#include "staticlm/backends/cpu/kernels/linear_columns.h"
#include "staticlm/backends/cpu/kernels/simd_tags.h"

namespace staticlm::cpu::tiles {

// One tile: ROWS rows of x against COLS weight rows, each output a dot product along K held in
// one register until the end. The weight registers are loaded once per step and reused by every
// row, so prefill reads each weight byte once per tile of rows and decode (ROWS = 1) streams it.
template <class V, class T, int ROWS, int COLS>
void tile(const LinearOperands& op, int64_t m0, int64_t n0) {
  using Elem = typename T::Elem;
  const int64_t inner = op.inner;
  const float* x[ROWS];
#pragma GCC unroll 16
  for (int i = 0; i < ROWS; ++i) {
    x[i] = op.x + (m0 + i) * inner;
  }
  const Elem* w[COLS];
#pragma GCC unroll 16
  for (int j = 0; j < COLS; ++j) {
    w[j] = static_cast<const Elem*>(op.weight) + (n0 + j) * inner;
  }
  // The next column tile's rows, prefetched step by step: a tile reads COLS rows at once, too
  // many short streams for the hardware prefetcher to keep ahead of (short prompts ran a
  // quarter faster with it). Past the last column, the tile's own rows again.
  const Elem* next[COLS];
#pragma GCC unroll 16
  for (int j = 0; j < COLS; ++j) {
    next[j] = n0 + COLS + j < op.columns ? w[j] + COLS * inner : w[j];
  }
  typename V::Reg acc[ROWS][COLS];
#pragma GCC unroll 16
  for (int i = 0; i < ROWS; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < COLS; ++j) {
      acc[i][j] = V::zero();
    }
  }
  int64_t k = 0;
  for (; k + V::kWidth <= inner; k += V::kWidth) {
    typename V::Reg wv[COLS];
#pragma GCC unroll 16
    for (int j = 0; j < COLS; ++j) {
      __builtin_prefetch(next[j] + k);
      wv[j] = V::load(T{}, w[j] + k);
    }
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) {
      const typename V::Reg xv = V::load(F32{}, x[i] + k);
#pragma GCC unroll 16
      for (int j = 0; j < COLS; ++j) {
        acc[i][j] = V::fma(xv, wv[j], acc[i][j]);
      }
    }
  }
  if (k < inner) {
    const int rest = static_cast<int>(inner - k);
    typename V::Reg wv[COLS];
#pragma GCC unroll 16
    for (int j = 0; j < COLS; ++j) {
      wv[j] = V::load_tail(T{}, w[j] + k, rest);
    }
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) {
      const typename V::Reg xv = V::load_tail(F32{}, x[i] + k, rest);
#pragma GCC unroll 16
      for (int j = 0; j < COLS; ++j) {
        acc[i][j] = V::fma(xv, wv[j], acc[i][j]);
      }
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < ROWS; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < COLS; ++j) {
      op.out[(m0 + i) * op.columns + n0 + j] = V::hsum(acc[i][j]);
    }
  }
}

// Decode (one row of x): each weight row is read start to end, in memory order, so the whole
// matrix is one sequential stream the hardware prefetcher follows; four accumulators hide the
// multiply-add latency. x stays in L1.
template <class V, class T>
void gemv_rows(const LinearOperands& op, int64_t n_begin, int64_t n_end) {
  using Elem = typename T::Elem;
  const int64_t inner = op.inner;
  constexpr int64_t kStep = 4 * V::kWidth;
  for (int64_t n = n_begin; n < n_end; ++n) {
    const Elem* w = static_cast<const Elem*>(op.weight) + n * inner;
    typename V::Reg acc0 = V::zero(), acc1 = V::zero(), acc2 = V::zero(), acc3 = V::zero();
    int64_t k = 0;
    for (; k + kStep <= inner; k += kStep) {
      acc0 = V::fma(V::load(F32{}, op.x + k), V::load(T{}, w + k), acc0);
      acc1 = V::fma(V::load(F32{}, op.x + k + V::kWidth), V::load(T{}, w + k + V::kWidth), acc1);
      acc2 = V::fma(V::load(F32{}, op.x + k + 2 * V::kWidth), V::load(T{}, w + k + 2 * V::kWidth), acc2);
      acc3 = V::fma(V::load(F32{}, op.x + k + 3 * V::kWidth), V::load(T{}, w + k + 3 * V::kWidth), acc3);
    }
    for (; k + V::kWidth <= inner; k += V::kWidth) {
      acc0 = V::fma(V::load(F32{}, op.x + k), V::load(T{}, w + k), acc0);
    }
    if (k < inner) {
      const int rest = static_cast<int>(inner - k);
      acc1 = V::fma(V::load_tail(F32{}, op.x + k, rest), V::load_tail(T{}, w + k, rest), acc1);
    }
    op.out[n] = V::hsum(V::add(V::add(acc0, acc1), V::add(acc2, acc3)));
  }
}

// The rows of one column tile, kTileRows at a time, then the remaining few.
template <class V, class T, int COLS>
void column_tile(const LinearOperands& op, int64_t n0) {
  int64_t m = 0;
  for (; m + V::kTileRows <= op.rows; m += V::kTileRows) {
    tile<V, T, V::kTileRows, COLS>(op, m, n0);
  }
  for (; m < op.rows; ++m) {
    tile<V, T, 1, COLS>(op, m, n0);
  }
}

// The packed GEMM, for a chunk of rows: W's columns [n0, n0 + 32) x [k0, k0 + kb) transposed into
// panel[k][j] (widened to f32, zero past the last column), then every block of ROWS rows runs a
// broadcast micro-kernel over it: per k, two panel registers (32 columns) and one broadcast x
// value per row feed 2 * ROWS accumulators, with no horizontal sums. Partial sums of earlier K
// blocks are read back from `out`.
template <class V, class T>
void pack_panel(const LinearOperands& op, int64_t n0, int64_t k0, int64_t kb, float* panel) {
  using Elem = typename T::Elem;
  const int64_t cols = op.columns - n0 < kPanelColumns ? op.columns - n0 : kPanelColumns;
  // Blocks of kWidth weight rows x kWidth k, widened, transposed in registers, stored as rows of
  // the panel; rows past the last column are zero.
  for (int64_t jb = 0; jb < kPanelColumns; jb += V::kWidth) {
    for (int64_t k = 0; k < kb; k += V::kWidth) {
      const int rest = kb - k < V::kWidth ? static_cast<int>(kb - k) : V::kWidth;
      typename V::Reg r[V::kWidth];
#pragma GCC unroll 16
      for (int i = 0; i < V::kWidth; ++i) {
        const int64_t j = jb + i;
        const Elem* w = static_cast<const Elem*>(op.weight) + (n0 + j) * op.inner + k0 + k;
        r[i] = j >= cols ? V::zero() : (rest == V::kWidth ? V::load(T{}, w) : V::load_tail(T{}, w, rest));
      }
      V::transpose(r);
      for (int t = 0; t < rest; ++t) {
        V::store(panel + (k + t) * kPanelColumns + jb, r[t]);
      }
    }
  }
}

template <class V, int ROWS>
void panel_rows(const LinearOperands& op, const float* panel, int64_t m0, int64_t n0, int64_t k0, int64_t kb) {
  constexpr int kRegs = static_cast<int>(kPanelColumns) / V::kWidth;
  const int64_t cols = op.columns - n0 < kPanelColumns ? op.columns - n0 : kPanelColumns;
  const bool full = cols == kPanelColumns;
  typename V::Reg acc[ROWS][kRegs];
  alignas(64) float partial[kPanelColumns];
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    float* out = op.out + (m0 + r) * op.columns + n0;
#pragma GCC unroll 16
    for (int c = 0; c < kRegs; ++c) {
      acc[r][c] = V::zero();
    }
    if (k0 == 0) {
      continue;
    }
    if (!full) {
      for (int64_t j = 0; j < kPanelColumns; ++j) {
        partial[j] = j < cols ? out[j] : 0.0f;
      }
      out = partial;
    }
#pragma GCC unroll 16
    for (int c = 0; c < kRegs; ++c) {
      acc[r][c] = V::load(F32{}, out + c * V::kWidth);
    }
  }
  const float* x[ROWS];
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    x[r] = op.x + (m0 + r) * op.inner + k0;
  }
  for (int64_t k = 0; k < kb; ++k) {
    typename V::Reg w[kRegs];
#pragma GCC unroll 16
    for (int c = 0; c < kRegs; ++c) {
      w[c] = V::load(F32{}, panel + k * kPanelColumns + c * V::kWidth);
    }
#pragma GCC unroll 16
    for (int r = 0; r < ROWS; ++r) {
      const typename V::Reg b = V::broadcast(x[r] + k);
#pragma GCC unroll 16
      for (int c = 0; c < kRegs; ++c) {
        acc[r][c] = V::fma(b, w[c], acc[r][c]);
      }
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    float* out = op.out + (m0 + r) * op.columns + n0;
    float* target = full ? out : partial;
#pragma GCC unroll 16
    for (int c = 0; c < kRegs; ++c) {
      V::store(target + c * V::kWidth, acc[r][c]);
    }
    if (!full) {
      for (int64_t j = 0; j < cols; ++j) {
        out[j] = partial[j];
      }
    }
  }
}

// Rows [m, rows), fewer than kPanelRows, in one block of exactly that many: row by row, each
// would reread the whole panel.
template <class V, int ROWS = 1>
void panel_tail(const LinearOperands& op, const float* panel, int64_t m, int64_t n0, int64_t k0, int64_t kb) {
  if constexpr (ROWS < V::kPanelRows) {
    if (op.rows - m == ROWS) {
      panel_rows<V, ROWS>(op, panel, m, n0, k0, kb);
    } else {
      panel_tail<V, ROWS + 1>(op, panel, m, n0, k0, kb);
    }
  }
}

template <class V, class T>
void packed_gemm(const LinearOperands& op, int64_t n_begin, int64_t n_end, float* panel) {
  constexpr int kRows = V::kPanelRows;
  for (int64_t n0 = n_begin; n0 < n_end; n0 += kPanelColumns) {
    for (int64_t k0 = 0; k0 < op.inner; k0 += kPackedInnerBlock) {
      const int64_t kb = op.inner - k0 < kPackedInnerBlock ? op.inner - k0 : kPackedInnerBlock;
      pack_panel<V, T>(op, n0, k0, kb, panel);
      int64_t m = 0;
      for (; m + kRows <= op.rows; m += kRows) {
        panel_rows<V, kRows>(op, panel, m, n0, k0, kb);
      }
      panel_tail<V>(op, panel, m, n0, k0, kb);
    }
  }
}

template <class V, class T>
void columns(const LinearOperands& op, int64_t n_begin, int64_t n_end, float* scratch) {
  if (op.rows == 1) {
    gemv_rows<V, T>(op, n_begin, n_end);
    return;
  }
  if (op.rows >= kPackedMinRows) {
    packed_gemm<V, T>(op, n_begin, n_end, scratch);
    return;
  }
  for (int64_t n0 = n_begin; n0 < n_end; n0 += kLinearColumnsPerItem) {
    switch (op.columns - n0) {
      case 1: column_tile<V, T, 1>(op, n0); break;
      case 2: column_tile<V, T, 2>(op, n0); break;
      case 3: column_tile<V, T, 3>(op, n0); break;
      default: column_tile<V, T, 4>(op, n0); break;
    }
  }
}

template <class V>
void linear_columns(const LinearOperands& op, int64_t n_begin, int64_t n_end, float* scratch) {
  switch (op.weight_dtype) {
    case DType::kF16: columns<V, F16>(op, n_begin, n_end, scratch); break;
    case DType::kBF16: columns<V, Bf16>(op, n_begin, n_end, scratch); break;
    default: columns<V, F32>(op, n_begin, n_end, scratch); break;
  }
}

}  // namespace staticlm::cpu::tiles
