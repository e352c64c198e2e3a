// SPDX-License-Identifier: Apache-2.0
// The int8 / int4 linear panels for NEON with dotprod (Armv8.2's sdot: Cortex-A55 / A76 and
// later, Neoverse N1 and later): sdot sums four signed byte products into each 32-bit lane, one
// instruction per word row where the plain NEON kernel (linear_q_neon.cpp) spends four; the
// integer sums, and so the results, are the same (the traits: simd_neon_dot.h). A chunk of more
// than 32 rows (int4: more than 16) copies each span of groups once into the per-thread buffer
// as dot_rows reads it: codes signed (no offset, no eor in the loop), each register's words of a
// group together, the scales widened to f32. dot_rows then finishes one register's sums of a
// group before the next register's, as ggml's kernels do, so the scale steps overlap the sdot
// and nothing spills: per group of 32 weights, scales included, 0.65 of sdot's peak in llvm-mca's
// Neoverse N1 model and 0.65 in V1's (bench/neon_mca.py), where a word row at a time for every
// register, then every scale step, gave 0.42 / 0.46.
#include <arm_neon.h>

#include <cstring>

#include "staticlm/backends/cpu/kernels/arm/linear_arm.h"
#include "staticlm/backends/cpu/kernels/quantized_rows.h"

// Everything the templates below use is included above, so nothing inline from the standard
// library is compiled for dotprod and merged into callers that run on any AArch64 CPU.
// Clang (the Android NDK's compiler) takes its own form of the same region.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("dotprod"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")
#endif

#include "staticlm/backends/cpu/kernels/arm/linear_q_gemv.h"
#include "staticlm/backends/cpu/kernels/arm/simd_neon.h"
#include "staticlm/backends/cpu/kernels/arm/simd_neon_dot.h"
#include "staticlm/backends/cpu/kernels/arm/simd_neon_int.h"
#include "staticlm/backends/cpu/kernels/linear_quant_tiles.h"

namespace staticlm::cpu {
namespace {

using simd::NeonDot;
constexpr int kR = qtiles::kRegs<NeonDot>;  // registers of 4 lanes per panel
constexpr int64_t kWordBytes = 16;          // one register's 4 lanes x 4 k
// A span group's scales, widened to f32 once by the pass that writes the span.
constexpr int64_t kSpanScaleBytes = kPanelColumns * static_cast<int64_t>(sizeof(float));

// The bytes of one group in a span (span_of), and the groups the buffer holds.
int64_t span_group_bytes(const LinearOperands& op) {
  return kSpanScaleBytes + kPanelColumns * op.group;
}
int64_t span_groups(const LinearOperands& op) {
  return qtiles::kUnpackScratchBytes / span_group_bytes(op);
}

// Groups [first, last) of panel `panel` into `scratch` as dot_rows reads them: per group, the 32
// scales as f32, then per register c of 4 lanes its g / 4 words of k in k order (16 bytes each),
// as signed codes q: int8's top bit flipped, int4's nibbles less 8. No sums carry an offset, and
// a register's words lie together, so its whole group is one run of loads.
qtiles::GroupSpan span_of(const LinearOperands& op, const uint8_t* panel, int64_t first, int64_t last,
                          uint8_t* scratch) {
  const int64_t gbytes = qtiles::group_bytes(op);
  const int64_t out_bytes = span_group_bytes(op);
  const int64_t words = op.group / 4;
  const bool int4 = op.codes == PanelCodes::kInt4;
  for (int64_t gi = first; gi < last; ++gi) {
    const uint8_t* group = panel + gi * gbytes;
    uint8_t* out = scratch + (gi - first) * out_bytes;
    const uint16_t* half_scales = reinterpret_cast<const uint16_t*>(group);
    float* scales = reinterpret_cast<float*>(out);
    tiles::prefetch_lines<qtiles::kScaleBytes>(reinterpret_cast<const char*>(group) + tiles::kGemvPrefetchBytes);
#pragma GCC unroll 8
    for (int c = 0; c < kR; ++c) {
      NeonDot::store(scales + c * NeonDot::kWidth, NeonDot::load(tiles::F16{}, half_scales + c * NeonDot::kWidth));
    }
    const uint8_t* codes = group + qtiles::kScaleBytes;
    int8_t* lanes = reinterpret_cast<int8_t*>(out + kSpanScaleBytes);
    // Stored word row j: int8's k 4j .. 4j + 3; int4's k 8j .. 8j + 3 (low nibbles) and 8j + 4 ..
    // 8j + 7 (high ones).
    for (int64_t j = 0; j < (int4 ? words / 2 : words); ++j) {
      const uint8_t* row = codes + j * qtiles::kWordRowBytes;
      tiles::prefetch_lines<qtiles::kWordRowBytes>(reinterpret_cast<const char*>(row) + tiles::kGemvPrefetchBytes);
#pragma GCC unroll 8
      for (int c = 0; c < kR; ++c) {
        const uint8x16_t w = vld1q_u8(row + c * kWordBytes);
        int8_t* lane = lanes + c * words * kWordBytes;
        if (int4) {
          vst1q_s8(lane + 2 * j * kWordBytes,
                   vsubq_s8(vreinterpretq_s8_u8(vandq_u8(w, vdupq_n_u8(0x0F))), vdupq_n_s8(8)));
          vst1q_s8(lane + (2 * j + 1) * kWordBytes, vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(w, 4)), vdupq_n_s8(8)));
        } else {
          vst1q_s8(lane + j * kWordBytes, vreinterpretq_s8_u8(veorq_u8(w, vdupq_n_u8(0x80))));
        }
      }
    }
  }
  return {scratch, out_bytes, first, last, 0};
}

// Registers of lanes a step of dot_rows sums at once: with two rows, four chains of sdot, which
// cover its latency on two pipes.
constexpr int kStepRegs = 2;

// Words S .. END - 1 of CS registers' runs (register i's at words[i] + at) against ROWS rows' x
// codes (word S of row r: lane S % 4 of x[S / 4][r]), into ia: sdot by element, whose lane is a
// constant, as the instruction takes it.
template <int CS, int ROWS, int S, int END>
[[gnu::always_inline]] inline void dot_words(int32x4_t (&ia)[CS][ROWS], const int8_t* const* words, int64_t at,
                                             const int8x16_t (*x)[ROWS]) {
#pragma GCC unroll 4
  for (int i = 0; i < CS; ++i) {
    const int8x16_t w = vld1q_s8(words[i] + at + S * kWordBytes);
#pragma GCC unroll 4
    for (int r = 0; r < ROWS; ++r) {
      ia[i][r] = vdotq_laneq_s32(ia[i][r], w, x[S / 4][r], S % 4);
    }
  }
  if constexpr (S + 1 < END) {
    dot_words<CS, ROWS, S + 1, END>(ia, words, at, x);
  }
}

// CS registers' KB k of words (register i's at words[i] + at) against ROWS rows' KB x codes at
// x[r], into ia.
template <int CS, int ROWS, int KB>
[[gnu::always_inline]] inline void dot_block(int32x4_t (&ia)[CS][ROWS], const int8_t* const* words, int64_t at,
                                             const int8_t* const* x) {
  int8x16_t xv[KB / 16][ROWS];
#pragma GCC unroll 2
  for (int q = 0; q < KB / 16; ++q) {
#pragma GCC unroll 4
    for (int r = 0; r < ROWS; ++r) {
      xv[q][r] = vld1q_s8(x[r] + 16 * q);
    }
  }
  dot_words<CS, ROWS, 0, KB / 4>(ia, words, at, xv);
}

// ROWS rows from m0 over a span of span_of's groups, the float sums kept in registers across the
// span and added to out (written, for the first span). CS registers of lanes at a time take
// their group's whole sums for every row, then their scale step, before the next CS: the scale
// step of one overlaps the sdot of the next, and only CS x ROWS integer sums are live beside the
// 8 x ROWS float sums and x's codes. A group is KB k (16 or 32, x's codes held in registers), or
// (ONE_BLOCK false) a loop over blocks of KB.
template <int ROWS, int KB, bool ONE_BLOCK>
void dot_rows(const LinearOperands& op, const qtiles::GroupSpan& span, int64_t m0, int64_t n0) {
  using Reg = NeonDot::Reg;
  constexpr int CS = kStepRegs;
  const QuantizedRows& xq = *op.x_quantized;
  const int64_t g = op.group;
  // A register's words of one group: a constant where it can be, the loads' offsets.
  const int64_t run = (ONE_BLOCK ? KB : g) / 4 * kWordBytes;
  const int64_t blocks = ONE_BLOCK ? 1 : g / KB;
  const int64_t cols = op.columns - n0 < kPanelColumns ? op.columns - n0 : kPanelColumns;
  Reg acc[ROWS][kR];
#pragma GCC unroll 4
  for (int r = 0; r < ROWS; ++r) {
    alignas(16) float partial[kPanelColumns] = {};
    if (span.first > 0) {
      std::memcpy(partial, op.out + (m0 + r) * op.columns + n0, static_cast<size_t>(cols) * sizeof(float));
    }
#pragma GCC unroll 8
    for (int c = 0; c < kR; ++c) {
      acc[r][c] = NeonDot::load(tiles::F32{}, partial + c * NeonDot::kWidth);
    }
  }
  const int8_t* x_rows[ROWS];
  const float* dx_rows[ROWS];
#pragma GCC unroll 4
  for (int r = 0; r < ROWS; ++r) {
    x_rows[r] = xq.codes(m0 + r);
    dx_rows[r] = xq.row_scales(m0 + r);
  }
  for (int64_t gi = span.first; gi < span.last; ++gi) {
    const uint8_t* group = span.base + (gi - span.first) * span.stride;
    const float* scales = reinterpret_cast<const float*>(group);
    const int8_t* lanes = reinterpret_cast<const int8_t*>(group + kSpanScaleBytes);
    const int8_t* x[ROWS];
    float dx[ROWS];
#pragma GCC unroll 4
    for (int r = 0; r < ROWS; ++r) {
      x[r] = x_rows[r] + gi * g;
      dx[r] = dx_rows[r][gi];
    }
#pragma GCC unroll 8
    for (int c0 = 0; c0 < kR; c0 += CS) {
      int32x4_t ia[CS][ROWS];
      const int8_t* words[CS];
#pragma GCC unroll 4
      for (int i = 0; i < CS; ++i) {
        words[i] = lanes + (c0 + i) * run;
#pragma GCC unroll 4
        for (int r = 0; r < ROWS; ++r) {
          ia[i][r] = vdupq_n_s32(NeonDot::kSumBias);
        }
      }
      for (int64_t b = 0; b < blocks; ++b) {
        const int8_t* xb[ROWS];
#pragma GCC unroll 4
        for (int r = 0; r < ROWS; ++r) {
          xb[r] = x[r] + b * KB;
        }
        dot_block<CS, ROWS, KB>(ia, words, b * (KB / 4) * kWordBytes, xb);
      }
#pragma GCC unroll 4
      for (int i = 0; i < CS; ++i) {
        const Reg d = NeonDot::load(tiles::F32{}, scales + (c0 + i) * NeonDot::kWidth);
#pragma GCC unroll 4
        for (int r = 0; r < ROWS; ++r) {
          // qtiles::scale_group's arithmetic, lane for lane, with no offset.
          const Reg sum = NeonDot::from_biased(ia[i][r]);
          acc[r][c0 + i] = NeonDot::fma(sum, vmulq_n_f32(d, dx[r]), acc[r][c0 + i]);
          // An empty volatile asm on the new sum: g++'s scheduler moves nothing across it, so
          // the next registers' sdot stay after this scale step. Left to itself it hoists them
          // all above every scale step, with every integer sum live at once, and spills.
          asm volatile("" : "+w"(acc[r][c0 + i]));
        }
      }
    }
  }
  // Through a copy of each row's registers, not tiles::store_panel: taking acc's address kept it in
  // memory, stored on every group.
#pragma GCC unroll 4
  for (int r = 0; r < ROWS; ++r) {
    alignas(16) float lanes[kPanelColumns];
#pragma GCC unroll 8
    for (int c = 0; c < kR; ++c) {
      NeonDot::store(lanes + c * NeonDot::kWidth, acc[r][c]);
    }
    std::memcpy(op.out + (m0 + r) * op.columns + n0, lanes, static_cast<size_t>(cols) * sizeof(float));
  }
}

// Every row of the chunk over a span, two at a time and an odd last one alone, with the group's
// k in registers where it fits (16 or 32) and in blocks of 32 otherwise.
template <int ROWS>
void dot_rows_of(const LinearOperands& op, const qtiles::GroupSpan& span, int64_t m0, int64_t n0) {
  if (op.group == 16) {
    dot_rows<ROWS, 16, true>(op, span, m0, n0);
  } else if (op.group == 32) {
    dot_rows<ROWS, 32, true>(op, span, m0, n0);
  } else {
    dot_rows<ROWS, 32, false>(op, span, m0, n0);
  }
}

// A chunk over panel p, a span of groups at a time in `scratch` (span_of), read there by every
// block of rows.
void gemm_panel(const LinearOperands& op, int64_t p, uint8_t* scratch) {
  const uint8_t* panel = static_cast<const uint8_t*>(op.weight) + p * op.panel_elements;
  const int64_t groups = op.x_quantized->groups;
  const int64_t per_span = span_groups(op);
  for (int64_t first = 0; first < groups; first += per_span) {
    const int64_t last = first + per_span < groups ? first + per_span : groups;
    const qtiles::GroupSpan span = span_of(op, panel, first, last, scratch);
    int64_t m = 0;
    for (; m + 2 <= op.rows; m += 2) {
      dot_rows_of<2>(op, span, m, p * kPanelColumns);
    }
    if (m < op.rows) {
      dot_rows_of<1>(op, span, m, p * kPanelColumns);
    }
  }
}

}  // namespace

void linear_columns_q_dotprod(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch) {
  if (operands.rows == 1) {  // decode: sdot on the panels as stored
    qgemv::columns<false>(operands, n_begin, n_end);
    return;
  }
  // A few rows stream the panels as stored (int4 split in registers).
  const bool streamed =
      operands.rows <= qtiles::kStreamedQuantRows &&
      (operands.codes != PanelCodes::kInt4 || operands.rows <= qtiles::kPackedRowBlocks * NeonDot::kQuantRows);
  const int64_t p_end = (n_end + kPanelColumns - 1) / kPanelColumns;
  for (int64_t p = n_begin / kPanelColumns; p < p_end; ++p) {
    if (streamed) {
      qtiles::gemm_panel<NeonDot>(operands, p, reinterpret_cast<uint8_t*>(scratch));
    } else {
      gemm_panel(operands, p, reinterpret_cast<uint8_t*>(scratch));
    }
  }
}

}  // namespace staticlm::cpu

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
