// The linear kernels over int8 / int4 panels (panel32_q8 / panel32_q4, ops/weight_layout.h),
// written once over an integer traits type Q and instantiated by each ISA file after its target
// pragma (linear_q_avx512vnni.cpp, linear_q_avx2.cpp). Include it only there, after the pragma
// and inside no namespace: everything here is compiled for that ISA.
//
// Per panel and k group, the weights are 32 lanes of u8 codes (q + offset), four consecutive k
// values of a lane in one 32-bit word, and x is int8 codes per group (quantized_rows.h). A step
// multiplies one word row (32 lanes x 4 k) by four x codes broadcast to every lane, summing the
// four products per lane into int32 (Q::dot4: vpdpbusd, or its exact AVX2 equivalent); at the end
// of a group the lanes' sums, less offset x the group's x code sum, become floats scaled by the
// lane's weight scale times the group's x scale. int4 words hold k 8j..8j+3 in their low nibbles
// and 8j+4..8j+7 in their high ones: a decode step splits them in registers; a chunk unpacks each
// group once into `scratch` as int8 codes (offset 8) and reuses it for every row.
//
// Q provides the float traits (Reg, kWidth, zero, fma, mul, set1, store, load(F16{}, p)) and:
// IReg; izero(); iload(p) (kWidth words at p); XWord; xword(w) (a word of four x codes, ready for
// dot4); dot4(acc, w, x); low_nibbles(w), high_nibbles(w) (each byte's nibble as a byte);
// to_float(acc, offset_sum) (acc - offset_sum in every lane, as floats); kQuantRows (rows a chunk
// step takes at once).
#pragma once

#include <cstdint>

#include "staticlm/backends/cpu/kernels/linear_columns.h"
#include "staticlm/backends/cpu/kernels/linear_tiles.h"
#include "staticlm/backends/cpu/kernels/quantized_rows.h"
#include "staticlm/backends/cpu/kernels/simd_tags.h"

namespace staticlm::cpu::qtiles {

// Bytes of a group's scales, and of one word row of codes (32 lanes x 4 bytes).
inline constexpr int64_t kScaleBytes = kPanelColumns * 2;
inline constexpr int64_t kWordRowBytes = kPanelColumns * 4;

template <class Q>
inline constexpr int kRegs = static_cast<int>(kPanelColumns) / Q::kWidth;

// The bytes of one k group of a panel: scales, then codes.
inline int64_t group_bytes(const LinearOperands& op) {
  return kScaleBytes + kPanelColumns * op.group / (op.codes == PanelCodes::kInt4 ? 2 : 1);
}

// acc[c] += (ia[c] - offset * sum) * (d[c] * dx): one group's integer sums, into floats.
template <class Q>
void scale_group(typename Q::Reg* acc, const typename Q::IReg* ia, const uint8_t* group_start, int32_t offset_sum,
                 float dx) {
  const uint16_t* scales = reinterpret_cast<const uint16_t*>(group_start);
  const typename Q::Reg x_scale = Q::set1(dx);
#pragma GCC unroll 16
  for (int c = 0; c < kRegs<Q>; ++c) {
    const typename Q::Reg d = Q::load(tiles::F16{}, scales + c * Q::kWidth);
    acc[c] = Q::fma(Q::to_float(ia[c], offset_sum), Q::mul(d, x_scale), acc[c]);
  }
}

// Decode (one row of x) over panel p: each group's word rows streamed in memory order, int4
// nibbles split in registers.
template <class Q>
void gemv_panel(const LinearOperands& op, int64_t p) {
  using Reg = typename Q::Reg;
  using IReg = typename Q::IReg;
  constexpr int kR = kRegs<Q>;
  const QuantizedRows& xq = *op.x_quantized;
  const int64_t g = op.group;
  const int64_t gbytes = group_bytes(op);
  const uint8_t* panel = static_cast<const uint8_t*>(op.weight) + p * op.panel_elements;
  const int32_t* x_words = xq.words(0);
  const float* x_scales = xq.row_scales(0);
  const int32_t* x_sums = xq.row_sums(0);
  const bool int4 = op.codes == PanelCodes::kInt4;
  const int32_t offset = int4 ? 8 : 128;
  Reg acc[kR];
#pragma GCC unroll 16
  for (int c = 0; c < kR; ++c) {
    acc[c] = Q::zero();
  }
  for (int64_t gi = 0; gi < xq.groups; ++gi) {
    const uint8_t* group_start = panel + gi * gbytes;
    const uint8_t* codes = group_start + kScaleBytes;
    const int32_t* xw = x_words + gi * g / 4;
    tiles::prefetch_lines<kScaleBytes>(reinterpret_cast<const char*>(group_start) + tiles::kGemvPrefetchBytes);
    IReg ia[kR];
#pragma GCC unroll 16
    for (int c = 0; c < kR; ++c) {
      ia[c] = Q::izero();
    }
    if (int4) {
      for (int64_t j = 0; j < g / 8; ++j) {
        const uint8_t* row = codes + j * kWordRowBytes;
        tiles::prefetch_lines<kWordRowBytes>(reinterpret_cast<const char*>(row) + tiles::kGemvPrefetchBytes);
        const typename Q::XWord lo_x = Q::xword(xw[2 * j]);
        const typename Q::XWord hi_x = Q::xword(xw[2 * j + 1]);
#pragma GCC unroll 16
        for (int c = 0; c < kR; ++c) {
          const IReg w = Q::iload(row + c * Q::kWidth * 4);
          ia[c] = Q::dot4(ia[c], Q::low_nibbles(w), lo_x);
          ia[c] = Q::dot4(ia[c], Q::high_nibbles(w), hi_x);
        }
      }
    } else {
      for (int64_t s = 0; s < g / 4; ++s) {
        const uint8_t* row = codes + s * kWordRowBytes;
        tiles::prefetch_lines<kWordRowBytes>(reinterpret_cast<const char*>(row) + tiles::kGemvPrefetchBytes);
        const typename Q::XWord x = Q::xword(xw[s]);
#pragma GCC unroll 16
        for (int c = 0; c < kR; ++c) {
          ia[c] = Q::dot4(ia[c], Q::iload(row + c * Q::kWidth * 4), x);
        }
      }
    }
    scale_group<Q>(acc, ia, group_start, offset * x_sums[gi], x_scales[gi]);
  }
  tiles::store_panel<Q>(op, acc, op.out, p * kPanelColumns);
}

// ROWS rows from m0 against one group held as int8 codes at `codes` (g / 4 word rows, the
// scales at `scales`, stored with `offset`): each word row loaded once for all of them. The
// group's result is added to out (or written, for the first group).
template <class Q, int ROWS>
void gemm_group_rows(const LinearOperands& op, const uint8_t* scales, const uint8_t* codes, int32_t offset, int64_t m0,
                     int64_t n0, int64_t gi) {
  using Reg = typename Q::Reg;
  using IReg = typename Q::IReg;
  constexpr int kR = kRegs<Q>;
  const QuantizedRows& xq = *op.x_quantized;
  const int64_t g = op.group;
  IReg ia[ROWS][kR];
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
#pragma GCC unroll 16
    for (int c = 0; c < kR; ++c) {
      ia[r][c] = Q::izero();
    }
  }
  const int32_t* xw[ROWS];
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    xw[r] = xq.words(m0 + r) + gi * g / 4;
  }
  for (int64_t s = 0; s < g / 4; ++s) {
    IReg w[kR];
#pragma GCC unroll 16
    for (int c = 0; c < kR; ++c) {
      w[c] = Q::iload(codes + s * kWordRowBytes + c * Q::kWidth * 4);
    }
#pragma GCC unroll 16
    for (int r = 0; r < ROWS; ++r) {
      const typename Q::XWord x = Q::xword(xw[r][s]);
#pragma GCC unroll 16
      for (int c = 0; c < kR; ++c) {
        ia[r][c] = Q::dot4(ia[r][c], w[c], x);
      }
    }
  }
  const int64_t cols = op.columns - n0 < kPanelColumns ? op.columns - n0 : kPanelColumns;
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    float* out = op.out + (m0 + r) * op.columns + n0;
    alignas(64) float partial[kPanelColumns];
    Reg acc[kR];
    if (gi == 0) {
#pragma GCC unroll 16
      for (int c = 0; c < kR; ++c) {
        acc[c] = Q::zero();
      }
    } else {
      for (int64_t j = 0; j < kPanelColumns; ++j) {
        partial[j] = j < cols ? out[j] : 0.0f;
      }
#pragma GCC unroll 16
      for (int c = 0; c < kR; ++c) {
        acc[c] = Q::load(tiles::F32{}, partial + c * Q::kWidth);
      }
    }
    scale_group<Q>(acc, ia[r], scales, offset * xq.row_sums(m0 + r)[gi], xq.row_scales(m0 + r)[gi]);
#pragma GCC unroll 16
    for (int c = 0; c < kR; ++c) {
      Q::store(partial + c * Q::kWidth, acc[c]);
    }
    for (int64_t j = 0; j < cols; ++j) {
      out[j] = partial[j];
    }
  }
}

// Rows [m, rows), fewer than Q::kQuantRows, as one block of exactly that many.
template <class Q, int ROWS = 1>
void gemm_group_tail(const LinearOperands& op, const uint8_t* scales, const uint8_t* codes, int32_t offset, int64_t m,
                     int64_t n0, int64_t gi) {
  if constexpr (ROWS < Q::kQuantRows) {
    if (op.rows - m == ROWS) {
      gemm_group_rows<Q, ROWS>(op, scales, codes, offset, m, n0, gi);
    } else {
      gemm_group_tail<Q, ROWS + 1>(op, scales, codes, offset, m, n0, gi);
    }
  }
}

// A chunk of rows over panel p, group by group: an int4 group is unpacked once into `scratch`
// (int8 codes, offset 8) and every block of rows runs over it.
template <class Q>
void gemm_panel(const LinearOperands& op, int64_t p, uint8_t* scratch) {
  const int64_t gbytes = group_bytes(op);
  const uint8_t* panel = static_cast<const uint8_t*>(op.weight) + p * op.panel_elements;
  const bool int4 = op.codes == PanelCodes::kInt4;
  const int32_t offset = int4 ? 8 : 128;
  const int64_t n0 = p * kPanelColumns;
  for (int64_t gi = 0; gi < op.x_quantized->groups; ++gi) {
    const uint8_t* group_start = panel + gi * gbytes;
    const uint8_t* codes = group_start + kScaleBytes;
    if (int4) {
      // Word row j of the packed group holds the int8 word rows 2j (low nibbles) and 2j + 1.
      for (int64_t j = 0; j < op.group / 8; ++j) {
#pragma GCC unroll 16
        for (int c = 0; c < kRegs<Q>; ++c) {
          const typename Q::IReg w = Q::iload(codes + j * kWordRowBytes + c * Q::kWidth * 4);
          Q::istore(scratch + 2 * j * kWordRowBytes + c * Q::kWidth * 4, Q::low_nibbles(w));
          Q::istore(scratch + (2 * j + 1) * kWordRowBytes + c * Q::kWidth * 4, Q::high_nibbles(w));
        }
      }
      codes = scratch;
    }
    int64_t m = 0;
    for (; m + Q::kQuantRows <= op.rows; m += Q::kQuantRows) {
      gemm_group_rows<Q, Q::kQuantRows>(op, group_start, codes, offset, m, n0, gi);
    }
    gemm_group_tail<Q>(op, group_start, codes, offset, m, n0, gi);
  }
}

template <class Q>
void quantized_columns(const LinearOperands& op, int64_t n_begin, int64_t n_end, float* scratch) {
  const int64_t p_end = (n_end + kPanelColumns - 1) / kPanelColumns;
  for (int64_t p = n_begin / kPanelColumns; p < p_end; ++p) {
    if (op.rows == 1) {
      gemv_panel<Q>(op, p);
    } else {
      gemm_panel<Q>(op, p, reinterpret_cast<uint8_t*>(scratch));
    }
  }
}

}  // namespace staticlm::cpu::qtiles
