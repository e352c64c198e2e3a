// SPDX-License-Identifier: Apache-2.0
// The int8 / int4 linear panels for NEON with i8mm (Armv8.6's smmla: Neoverse V1 / N2 and later,
// Cortex-A510 / A710 and later). smmla multiplies a 2 x 8 block of signed bytes by another's
// transpose into a 2 x 2 block of int32 sums: two rows of x's codes (8 k each) against two
// columns of weights, 32 products per instruction where sdot has 16. A panel stores four k of a
// lane per word, word rows in k order (int4: the low and high nibbles of one word row), so the
// words of two adjacent word rows zipped hold two columns' 8 k each. A chunk interleaves a span
// of groups so once into a per-thread buffer, as signed codes (no offset), each lane pair's k of a
// group together and the scales widened to f32 in smmla's order; the weights stay as exported.
//
// Two rows by a whole panel at a time: 16 float sums of 2 rows x 2 columns, kept in smmla's order
// across the span and unzipped into rows once at its end. Each step finishes a few lane pairs'
// sums of a group, then scales them as every integer path does, before the next: per group of 32
// weights, scales included, 0.46 of smmla's peak in llvm-mca's Neoverse V1 model
// (bench/neon_mca.py), where four rows by half a panel a word row at a time, then every sum
// unzipped and scaled, gave 0.34. An odd last row, decode and calls of a few rows (which stream
// the panels as stored) run the sdot kernels. The integer sums are exact, so the results equal
// the other paths' bit for bit.
#include <arm_neon.h>

#include <cstring>

#include "staticlm/backends/cpu/kernels/arm/linear_arm.h"
#include "staticlm/backends/cpu/kernels/quantized_rows.h"

// Everything the templates below use is included above, so nothing inline from the standard
// library is compiled for i8mm and merged into callers that run on any AArch64 CPU.
// Clang (the Android NDK's compiler) takes its own form of the same region.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("dotprod,i8mm"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod+i8mm")
#endif

#include "staticlm/backends/cpu/kernels/arm/linear_q_gemv.h"
#include "staticlm/backends/cpu/kernels/arm/simd_neon.h"
#include "staticlm/backends/cpu/kernels/arm/simd_neon_dot.h"
#include "staticlm/backends/cpu/kernels/arm/simd_neon_int.h"
#include "staticlm/backends/cpu/kernels/linear_quant_tiles.h"

namespace staticlm::cpu {
namespace {

// The sdot traits, for decode and an odd last row (an i8mm CPU has dotprod: the entry needs both).
using Q = simd::NeonDot;
constexpr int kR = qtiles::kRegs<Q>;  // registers of 4 lanes per panel
constexpr int kLanePairs = 2 * kR;    // 16 pairs of adjacent lanes per panel
constexpr int64_t kPairBytes = 16;    // a lane pair's 8 k: smmla's B operand

// A span group's scales, widened to f32 once and laid out as the sums are: lane pair j's
// (d[2j], d[2j + 1], d[2j], d[2j + 1]).
constexpr int64_t kPairScaleBytes = kLanePairs * 4 * static_cast<int64_t>(sizeof(float));

int64_t span_group_bytes(const LinearOperands& op) {
  return kPairScaleBytes + kPanelColumns * op.group;
}

// Groups [first, last) of panel `panel` into `scratch`, each as its scales (kPairScaleBytes) and
// then, per lane pair j and 8 k t, 16 bytes: lane 2j's 8 signed codes, then lane 2j + 1's; a
// lane pair's 8 k steps of a group lie together.
qtiles::GroupSpan interleave(const LinearOperands& op, const uint8_t* panel, int64_t first, int64_t last,
                             uint8_t* scratch) {
  const int64_t gbytes = qtiles::group_bytes(op);
  const int64_t out_bytes = span_group_bytes(op);
  const int64_t steps = op.group / 8;
  const bool int4 = op.codes == PanelCodes::kInt4;
  for (int64_t gi = first; gi < last; ++gi) {
    const uint8_t* group = panel + gi * gbytes;
    uint8_t* out = scratch + (gi - first) * out_bytes;
    const uint16_t* half_scales = reinterpret_cast<const uint16_t*>(group);
    float* scales = reinterpret_cast<float*>(out);
    tiles::prefetch_lines<qtiles::kScaleBytes>(reinterpret_cast<const char*>(group) + tiles::kGemvPrefetchBytes);
#pragma GCC unroll 8
    for (int c = 0; c < kR; ++c) {
      const float32x4_t d = Q::load(tiles::F16{}, half_scales + c * Q::kWidth);
      vst1q_f32(scales + 8 * c, vcombine_f32(vget_low_f32(d), vget_low_f32(d)));  // lane pair 2c
      vst1q_f32(scales + 8 * c + 4, vcombine_f32(vget_high_f32(d), vget_high_f32(d)));
    }
    const uint8_t* codes = group + qtiles::kScaleBytes;
    int8_t* pairs = reinterpret_cast<int8_t*>(out + kPairScaleBytes);
    for (int64_t t = 0; t < steps; ++t) {
      // k 8t .. 8t + 3 and 8t + 4 .. 8t + 7 of every lane: int4's low and high nibbles of word row
      // t, int8's word rows 2t and 2t + 1.
      const uint8_t* low_k = codes + (int4 ? t : 2 * t) * qtiles::kWordRowBytes;
      const uint8_t* high_k = low_k + qtiles::kWordRowBytes;
      tiles::prefetch_lines<qtiles::kWordRowBytes>(reinterpret_cast<const char*>(low_k) + tiles::kGemvPrefetchBytes);
#pragma GCC unroll 8
      for (int c = 0; c < kR; ++c) {
        int8x16_t low, high;
        if (int4) {
          const uint8x16_t w = vld1q_u8(low_k + c * 16);
          low = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(w, vdupq_n_u8(0x0F))), vdupq_n_s8(8));
          high = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(w, 4)), vdupq_n_s8(8));
        } else {
          low = Q::signed_codes(Q::iload(low_k + c * 16));
          high = Q::signed_codes(Q::iload(high_k + c * 16));
        }
        const int32x4_t low_words = vreinterpretq_s32_s8(low);
        const int32x4_t high_words = vreinterpretq_s32_s8(high);
        int8_t* pair = pairs + (2 * c * steps + t) * kPairBytes;  // lanes 4c, 4c + 1; then 4c + 2, 4c + 3
        vst1q_s8(pair, vreinterpretq_s8_s32(vzip1q_s32(low_words, high_words)));
        vst1q_s8(pair + steps * kPairBytes, vreinterpretq_s8_s32(vzip2q_s32(low_words, high_words)));
      }
    }
  }
  return {scratch, out_bytes, first, last, 0};
}

// Lane pairs a step of mmla_pair sums at once.
constexpr int kStepPairs = 2;

// Rows m0 and m0 + 1 over an interleaved span, the float sums kept in registers across it in
// smmla's order: acc[j] = (row 0 x lane 2j, row 0 x lane 2j + 1, row 1 x lane 2j, row 1 x lane
// 2j + 1), added to out (written, for the first span) and unzipped into rows once at the end.
// Each step of kStepPairs lane pairs takes its group's whole sums, then its scale step, before
// the next, as dot_rows does for sdot: the scale step overlaps the next smmla, and only a few
// integer sums are live beside the 16 float sums and x's codes. A group is KB k (16 or 32, x's
// codes held in registers), or (ONE_BLOCK false) a loop over blocks of KB. Not inlined into its
// one caller, so that bench/neon_mca.py finds its loop by name.
template <int KB, bool ONE_BLOCK>
[[gnu::noinline]] void mmla_pair(const LinearOperands& op, const qtiles::GroupSpan& span, int64_t m0, int64_t n0) {
  constexpr int JS = kStepPairs;
  constexpr int kSteps = KB / 8;
  const QuantizedRows& xq = *op.x_quantized;
  const int64_t g = op.group;
  const int64_t steps = ONE_BLOCK ? kSteps : g / 8;  // a constant where it can be: the loads' offsets
  const int64_t blocks = ONE_BLOCK ? 1 : g / KB;
  const int64_t cols = op.columns - n0 < kPanelColumns ? op.columns - n0 : kPanelColumns;
  float32x4_t acc[kLanePairs];
  {
    alignas(16) float partial[2][kPanelColumns] = {};
    if (span.first > 0) {
#pragma GCC unroll 2
      for (int r = 0; r < 2; ++r) {
        std::memcpy(partial[r], op.out + (m0 + r) * op.columns + n0, static_cast<size_t>(cols) * sizeof(float));
      }
    }
#pragma GCC unroll 16
    for (int j = 0; j < kLanePairs; ++j) {
      acc[j] = vcombine_f32(vld1_f32(partial[0] + 2 * j), vld1_f32(partial[1] + 2 * j));
    }
  }
  const int8_t* x0 = xq.codes(m0);
  const int8_t* x1 = xq.codes(m0 + 1);
  const float* dx0 = xq.row_scales(m0);
  const float* dx1 = xq.row_scales(m0 + 1);
  for (int64_t gi = span.first; gi < span.last; ++gi) {
    const uint8_t* group = span.base + (gi - span.first) * span.stride;
    const float* scales = reinterpret_cast<const float*>(group);
    const int8_t* pairs = reinterpret_cast<const int8_t*>(group + kPairScaleBytes);
    // (dx of row 0, twice; dx of row 1, twice), as acc is laid out.
    const float32x4_t x_scale = vcombine_f32(vdup_n_f32(dx0[gi]), vdup_n_f32(dx1[gi]));
#pragma GCC unroll 16
    for (int j0 = 0; j0 < kLanePairs; j0 += JS) {
      int32x4_t sums[JS];
#pragma GCC unroll 4
      for (int i = 0; i < JS; ++i) {
        sums[i] = vdupq_n_s32(Q::kSumBias);  // Q::from_biased reads them
      }
      for (int64_t b = 0; b < blocks; ++b) {
        // The two rows' 8 k of step t in one register: smmla's A operand.
        int8x16_t x[kSteps];
#pragma GCC unroll 4
        for (int t = 0; t < kSteps; ++t) {
          const int64_t k = gi * g + b * KB + 8 * t;
          x[t] = vcombine_s8(vld1_s8(x0 + k), vld1_s8(x1 + k));
        }
#pragma GCC unroll 4
        for (int t = 0; t < kSteps; ++t) {
#pragma GCC unroll 4
          for (int i = 0; i < JS; ++i) {
            sums[i] = vmmlaq_s32(sums[i], x[t], vld1q_s8(pairs + ((j0 + i) * steps + b * kSteps + t) * kPairBytes));
          }
        }
      }
#pragma GCC unroll 4
      for (int i = 0; i < JS; ++i) {
        // qtiles::scale_group's arithmetic, lane for lane.
        const float32x4_t sum = Q::from_biased(sums[i]);
        acc[j0 + i] = vfmaq_f32(acc[j0 + i], sum, vmulq_f32(vld1q_f32(scales + 4 * (j0 + i)), x_scale));
        // A barrier to g++'s scheduler, as in dot_rows: the next smmla stay after this step.
        asm volatile("" : "+w"(acc[j0 + i]));
      }
    }
  }
  alignas(16) float rows[2][kPanelColumns];
#pragma GCC unroll 8
  for (int c = 0; c < kR; ++c) {
    const float64x2_t left = vreinterpretq_f64_f32(acc[2 * c]);
    const float64x2_t right = vreinterpretq_f64_f32(acc[2 * c + 1]);
    vst1q_f32(rows[0] + 4 * c, vreinterpretq_f32_f64(vzip1q_f64(left, right)));
    vst1q_f32(rows[1] + 4 * c, vreinterpretq_f32_f64(vzip2q_f64(left, right)));
  }
#pragma GCC unroll 2
  for (int r = 0; r < 2; ++r) {
    std::memcpy(op.out + (m0 + r) * op.columns + n0, rows[r], static_cast<size_t>(cols) * sizeof(float));
  }
}

// A chunk over panel p, a span of groups at a time: interleaved into `scratch` and read there by
// every pair of rows, with the group's k in registers where it fits (16 or 32) and in blocks of 32
// otherwise; an odd last row reads the span as stored, on sdot.
void gemm_panel(const LinearOperands& op, int64_t p, uint8_t* scratch) {
  const uint8_t* panel = static_cast<const uint8_t*>(op.weight) + p * op.panel_elements;
  const int64_t gbytes = qtiles::group_bytes(op);
  const int64_t groups = op.x_quantized->groups;
  const int64_t n0 = p * kPanelColumns;
  const int64_t per_span = qtiles::kUnpackScratchBytes / span_group_bytes(op);
  for (int64_t first = 0; first < groups; first += per_span) {
    const int64_t last = first + per_span < groups ? first + per_span : groups;
    const qtiles::GroupSpan span = interleave(op, panel, first, last, scratch);
    int64_t m = 0;
    for (; m + 2 <= op.rows; m += 2) {
      if (op.group == 16) {
        mmla_pair<16, true>(op, span, m, n0);
      } else if (op.group == 32) {
        mmla_pair<32, true>(op, span, m, n0);
      } else {
        mmla_pair<32, false>(op, span, m, n0);
      }
    }
    if (m < op.rows) {
      const qtiles::GroupSpan stored{panel + first * gbytes, gbytes, first, last, qtiles::dot_offset<Q>(op.codes)};
      if (op.codes == PanelCodes::kInt4) {
        qtiles::gemm_rows<Q, 1, true, true>(op, stored, m, n0);
      } else {
        qtiles::gemm_rows<Q, 1, false>(op, stored, m, n0);
      }
    }
  }
}

}  // namespace

void linear_columns_q_i8mm(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch) {
  if (operands.rows == 1) {  // decode: usdot on the panels as stored, int8 with no eor
    qgemv::columns<true>(operands, n_begin, n_end);
    return;
  }
  const int64_t p_end = (n_end + kPanelColumns - 1) / kPanelColumns;
  for (int64_t p = n_begin / kPanelColumns; p < p_end; ++p) {
    if (operands.rows <= qtiles::kStreamedQuantRows) {  // a few rows, streaming the panels as stored on sdot
      qtiles::gemm_panel<Q>(operands, p, reinterpret_cast<uint8_t*>(scratch));
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
