// The linear tiles, written once over an instruction-set traits type V and instantiated by each
// ISA file after its target pragma (linear_avx512.cpp, linear_avx2.cpp), so each copy is compiled
// for its own set. Include it only there, after the pragma and inside no namespace.
//
// V provides: Reg, kWidth (floats per Reg), kTileRows (rows of x per tile), zero(), fma(a, b, c)
// = a * b + c, add(a, b), hsum(r), load(T{}, p) and load_tail(T{}, p, n) for T in F32 / F16 / Bf16 (n < kWidth
// elements, the rest zero). It includes only declarations: anything inline defined after the
// pragma would be compiled for the ISA and could be merged into callers that run anywhere.
#pragma once

#include <cstdint>

#include "staticlm/backends/cpu/kernels/linear_columns.h"

namespace staticlm::cpu::tiles {

struct F32 {
  using Elem = float;
};
struct F16 {
  using Elem = uint16_t;
};
struct Bf16 {
  using Elem = uint16_t;
};

// One tile: ROWS rows of x against COLS weight rows, each output a dot product along K held in
// one register until the end. The weight registers are loaded once per step and reused by every
// row, so prefill reads each weight byte once per tile of rows and decode (ROWS = 1) streams it.
template <class V, class T, int ROWS, int COLS>
void tile(const LinearOperands& op, int64_t m0, int64_t n0) {
  using Elem = typename T::Elem;
  const int64_t inner = op.inner;
  const float* x[ROWS];
  for (int i = 0; i < ROWS; ++i) {
    x[i] = op.x + (m0 + i) * inner;
  }
  const Elem* w[COLS];
  for (int j = 0; j < COLS; ++j) {
    w[j] = static_cast<const Elem*>(op.weight) + (n0 + j) * inner;
  }
  typename V::Reg acc[ROWS][COLS];
  for (int i = 0; i < ROWS; ++i) {
    for (int j = 0; j < COLS; ++j) {
      acc[i][j] = V::zero();
    }
  }
  int64_t k = 0;
  for (; k + V::kWidth <= inner; k += V::kWidth) {
    typename V::Reg wv[COLS];
    for (int j = 0; j < COLS; ++j) {
      wv[j] = V::load(T{}, w[j] + k);
    }
    for (int i = 0; i < ROWS; ++i) {
      const typename V::Reg xv = V::load(F32{}, x[i] + k);
      for (int j = 0; j < COLS; ++j) {
        acc[i][j] = V::fma(xv, wv[j], acc[i][j]);
      }
    }
  }
  if (k < inner) {
    const int rest = static_cast<int>(inner - k);
    typename V::Reg wv[COLS];
    for (int j = 0; j < COLS; ++j) {
      wv[j] = V::load_tail(T{}, w[j] + k, rest);
    }
    for (int i = 0; i < ROWS; ++i) {
      const typename V::Reg xv = V::load_tail(F32{}, x[i] + k, rest);
      for (int j = 0; j < COLS; ++j) {
        acc[i][j] = V::fma(xv, wv[j], acc[i][j]);
      }
    }
  }
  for (int i = 0; i < ROWS; ++i) {
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

template <class V, class T>
void columns(const LinearOperands& op, int64_t item_begin, int64_t item_end) {
  if (op.rows == 1) {
    const int64_t n_end = item_end * kLinearColumnsPerItem;
    gemv_rows<V, T>(op, item_begin * kLinearColumnsPerItem, n_end < op.columns ? n_end : op.columns);
    return;
  }
  for (int64_t item = item_begin; item < item_end; ++item) {
    const int64_t n0 = item * kLinearColumnsPerItem;
    switch (op.columns - n0) {
      case 1: column_tile<V, T, 1>(op, n0); break;
      case 2: column_tile<V, T, 2>(op, n0); break;
      case 3: column_tile<V, T, 3>(op, n0); break;
      default: column_tile<V, T, 4>(op, n0); break;
    }
  }
}

template <class V>
void linear_columns(const LinearOperands& op, int64_t item_begin, int64_t item_end) {
  switch (op.weight_dtype) {
    case DType::kF16: columns<V, F16>(op, item_begin, item_end); break;
    case DType::kBF16: columns<V, Bf16>(op, item_begin, item_end); break;
    default: columns<V, F32>(op, item_begin, item_end); break;
  }
}

}  // namespace staticlm::cpu::tiles
