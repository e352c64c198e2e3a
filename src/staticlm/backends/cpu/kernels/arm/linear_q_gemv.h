// SPDX-License-Identifier: Apache-2.0
// Decode (one row of x) over int8 / int4 panels as stored, for the AArch64 dot product kernels:
// sdot (linear_q_dotprod.cpp) and usdot (linear_q_i8mm.cpp). Each register of 4 lanes takes its
// whole sum of a group (its word rows at 128-byte strides, x's codes by element), then its scale
// step, before the next register's, as dot_rows does for a chunk: only a few integer sums are
// live beside the float sums, and the scale steps overlap the next dot products. int8 codes are
// stored q + 128: sdot needs them signed (one eor per weight register), usdot multiplies them
// unsigned by x's signed codes and the offset comes back out of the sum (128 x the group's code
// sum of x); int4 codes (0..15, offset 8) are the same signed or unsigned. In llvm-mca's models
// (bench/neon_mca.py), per group of 32 weights of two panels, scales included: int8 11.6 and int4
// 11.4 multiply-adds a cycle on Neoverse N1 (sdot), int8 33.3 on V1 (usdot), where the shared
// gemv_panels of linear_quant_tiles.h (every sum of a group live at once, spilled) gave 8.8 / 8.7
// and 19.4.
//
// Include after the target pragma of a file that has dotprod (and i8mm, for usdot), with the
// standard headers above it; its namespace is anonymous, as the traits' are, so each file keeps
// the copy compiled for its target.
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#include "staticlm/backends/cpu/kernels/arm/simd_neon.h"
#include "staticlm/backends/cpu/kernels/arm/simd_neon_int.h"
#include "staticlm/backends/cpu/kernels/linear_quant_tiles.h"

namespace staticlm::cpu::qgemv {
namespace {

using Q = simd::NeonIntBase;
constexpr int kR = qtiles::kRegs<Q>;  // registers of 4 lanes per panel
constexpr int64_t kWordBytes = 16;    // one register's 4 lanes x 4 k

// Registers of lanes a step sums at once: four chains of dot products a panel (two modelled a
// little slower on every core, most on the in-order Cortex-A55, which waits on each chain).
constexpr int kStepRegs = 4;

// acc += w times x's word LANE, by element: usdot on the stored bytes (UNSIGNED), else sdot on
// them as signed codes (int8 flipped by dot_words, int4 nibbles as they are).
template <bool UNSIGNED, int LANE>
[[gnu::always_inline]] inline int32x4_t dot(int32x4_t acc, uint8x16_t w, int8x16_t x) {
  if constexpr (UNSIGNED) {
    return vusdotq_laneq_s32(acc, w, x, LANE);
  } else {
    return vdotq_laneq_s32(acc, vreinterpretq_s8_u8(w), x, LANE);
  }
}

// Words S .. END - 1 of a block (word s: k 4s .. 4s + 3 of the block, x's lane s % 4 of register
// s / 4) for CS registers, register i's word rows from rows[i] at 128-byte strides. int8: word s
// is word row s; int4: word row s / 2, its low nibbles for even s, high ones for odd.
template <bool UNSIGNED, bool INT4, int CS, int S, int END>
[[gnu::always_inline]] inline void dot_words(int32x4_t (&ia)[CS], const uint8_t* const* rows, const int8x16_t* x) {
#pragma GCC unroll 4
  for (int i = 0; i < CS; ++i) {
    if constexpr (INT4) {
      const uint8x16_t w = vld1q_u8(rows[i] + S / 2 * qtiles::kWordRowBytes);
      ia[i] = dot<UNSIGNED, S % 4>(ia[i], vandq_u8(w, vdupq_n_u8(0x0F)), x[S / 4]);
      ia[i] = dot<UNSIGNED, (S + 1) % 4>(ia[i], vshrq_n_u8(w, 4), x[S / 4]);
    } else {
      uint8x16_t w = vld1q_u8(rows[i] + S * qtiles::kWordRowBytes);
      if constexpr (!UNSIGNED) {
        w = veorq_u8(w, vdupq_n_u8(0x80));
      }
      ia[i] = dot<UNSIGNED, S % 4>(ia[i], w, x[S / 4]);
    }
  }
  constexpr int kNext = INT4 ? S + 2 : S + 1;
  if constexpr (kNext < END) {
    dot_words<UNSIGNED, INT4, CS, kNext, END>(ia, rows, x);
  }
}

// PANELS adjacent panels from p, a group at a time: KB k (16 or 32) of x's codes in registers, or
// (ONE_BLOCK false) a loop over blocks of KB. Each panel's sums are computed exactly as alone.
template <bool UNSIGNED, bool INT4, int PANELS, int KB, bool ONE_BLOCK>
void gemv_panels(const LinearOperands& op, int64_t p) {
  using Reg = Q::Reg;
  constexpr int CS = kStepRegs;
  const QuantizedRows& xq = *op.x_quantized;
  const int64_t g = op.group;
  const int64_t gbytes = qtiles::group_bytes(op);
  const int64_t blocks = ONE_BLOCK ? 1 : g / KB;
  // Word rows a block of KB k spans: int4 holds 8 k a word row.
  constexpr int64_t kBlockRows = INT4 ? KB / 8 : KB / 4;
  // The offset the dot products' sums carry: int4's always; int8's only as stored (usdot).
  const int32_t offset = INT4 ? code_offset(PanelCodes::kInt4) : UNSIGNED ? code_offset(PanelCodes::kInt8) : 0;
  const int8_t* x_codes = xq.codes(0);
  const uint8_t* panels[PANELS];
  Reg acc[PANELS][kR];
#pragma GCC unroll 2
  for (int i = 0; i < PANELS; ++i) {
    panels[i] = static_cast<const uint8_t*>(op.weight) + (p + i) * op.panel_elements;
#pragma GCC unroll 8
    for (int c = 0; c < kR; ++c) {
      acc[i][c] = vdupq_n_f32(0.0f);
    }
  }
  for (int64_t gi = 0; gi < xq.groups; ++gi) {
    const float dx = xq.row_scales(0)[gi];
    // Q::from_biased reads the sums: they start at kSumBias less the offset they will carry.
    const int32x4_t start = vdupq_n_s32(Q::kSumBias - offset * xq.row_sums(0)[gi]);
#pragma GCC unroll 2
    for (int i = 0; i < PANELS; ++i) {
      const uint8_t* group = panels[i] + gi * gbytes;
      const uint16_t* scales = reinterpret_cast<const uint16_t*>(group);
      const uint8_t* codes = group + qtiles::kScaleBytes;
      // The group's lines, ahead of the loads, as the other GEMVs ask; unrolled where the group
      // is one block.
      if constexpr (ONE_BLOCK) {
        tiles::prefetch_lines<qtiles::kScaleBytes + kPanelColumns * KB / (INT4 ? 2 : 1)>(
            reinterpret_cast<const char*>(group) + tiles::kGemvPrefetchBytes);
      } else {
        for (int64_t line = 0; line < gbytes; line += 64) {
          __builtin_prefetch(reinterpret_cast<const char*>(group) + tiles::kGemvPrefetchBytes + line, 0, 3);
        }
      }
#pragma GCC unroll 8
      for (int c0 = 0; c0 < kR; c0 += CS) {
        int32x4_t ia[CS];
#pragma GCC unroll 4
        for (int j = 0; j < CS; ++j) {
          ia[j] = start;
        }
        for (int64_t b = 0; b < blocks; ++b) {
          int8x16_t x[KB / 16];
#pragma GCC unroll 2
          for (int q = 0; q < KB / 16; ++q) {
            x[q] = vld1q_s8(x_codes + gi * g + b * KB + 16 * q);
          }
          const uint8_t* rows[CS];
#pragma GCC unroll 4
          for (int j = 0; j < CS; ++j) {
            rows[j] = codes + b * kBlockRows * qtiles::kWordRowBytes + (c0 + j) * kWordBytes;
          }
          dot_words<UNSIGNED, INT4, CS, 0, KB / 4>(ia, rows, x);
        }
#pragma GCC unroll 4
        for (int j = 0; j < CS; ++j) {
          // qtiles::scale_group's arithmetic, lane for lane.
          const Reg d = Q::load(tiles::F16{}, scales + (c0 + j) * Q::kWidth);
          const Reg sum = Q::from_biased(ia[j]);
          acc[i][c0 + j] = vfmaq_f32(acc[i][c0 + j], sum, vmulq_n_f32(d, dx));
          // A barrier to g++'s scheduler, as in dot_rows: the next dot products stay after this
          // step, so only a few integer sums are live at once.
          asm volatile("" : "+w"(acc[i][c0 + j]));
        }
      }
    }
  }
  // Through a copy of each panel's registers, not tiles::store_panel: taking acc's address kept it
  // in memory, stored on every group.
#pragma GCC unroll 2
  for (int i = 0; i < PANELS; ++i) {
    const int64_t n0 = (p + i) * kPanelColumns;
    const int64_t cols = op.columns - n0 < kPanelColumns ? op.columns - n0 : kPanelColumns;
    alignas(16) float lanes[kPanelColumns];
#pragma GCC unroll 8
    for (int c = 0; c < kR; ++c) {
      vst1q_f32(lanes + c * Q::kWidth, acc[i][c]);
    }
    std::memcpy(op.out + n0, lanes, static_cast<size_t>(cols) * sizeof(float));
  }
}

// gemv_panels with KB the group where it is 16 or 32, blocks of 32 otherwise.
template <bool UNSIGNED, bool INT4, int PANELS>
void gemv_blocks_of(const LinearOperands& op, int64_t p) {
  if (op.group == 16) {
    gemv_panels<UNSIGNED, INT4, PANELS, 16, true>(op, p);
  } else if (op.group == 32) {
    gemv_panels<UNSIGNED, INT4, PANELS, 32, true>(op, p);
  } else {
    gemv_panels<UNSIGNED, INT4, PANELS, 32, false>(op, p);
  }
}

// gemv_panels for the panels' codes and group.
template <bool UNSIGNED, int PANELS>
void gemv_panels_of(const LinearOperands& op, int64_t p) {
  if (op.codes == PanelCodes::kInt4) {
    gemv_blocks_of<UNSIGNED, true, PANELS>(op, p);
  } else {
    gemv_blocks_of<UNSIGNED, false, PANELS>(op, p);
  }
}

// Decode over panels [n_begin / 32, ceil(n_end / 32)): two panels at a time (two weight streams
// per thread, as the other GEMVs read them), a last one alone.
template <bool UNSIGNED>
void columns(const LinearOperands& op, int64_t n_begin, int64_t n_end) {
  const int64_t p_end = (n_end + kPanelColumns - 1) / kPanelColumns;
  int64_t p = n_begin / kPanelColumns;
  for (; p + 2 <= p_end; p += 2) {
    gemv_panels_of<UNSIGNED, 2>(op, p);
  }
  if (p < p_end) {
    gemv_panels_of<UNSIGNED, 1>(op, p);
  }
}

}  // namespace
}  // namespace staticlm::cpu::qgemv
