// SPDX-License-Identifier: Apache-2.0
// The int8 / int4 linear panels for NEON with i8mm (Armv8.6's smmla: Neoverse V1 / N2 and later,
// Cortex-A510 / A710 and later). smmla multiplies a 2 x 8 block of signed bytes by another's
// transpose into a 2 x 2 block of int32 sums: two rows of x's codes (8 k each) against two
// columns of weights, 32 products per instruction where sdot has 16. A panel stores four k of a
// lane per word, word rows in k order (int4: the low and high nibbles of one word row), so the
// words of two adjacent word rows zipped hold two columns' 8 k each. A chunk interleaves a span
// of groups so once into a per-thread buffer, as signed codes (no offset), and every pair of
// rows reads it with one load per smmla; the weights stay as exported.
//
// Per group, 16 accumulators of 2 rows x 2 columns cover four rows by half a panel (two rows by
// a whole panel for a pair left over); then each row's lanes are unzipped and scaled as every
// integer path scales them. An odd last row, decode and calls of a few rows (which stream the
// panels as stored) run the sdot kernels. The integer sums are exact, so the results equal the
// other paths' bit for bit.
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

// Groups [first, last) of panel `panel` into `scratch`, each as its scales and then, per 8 k and
// lane pair j, 16 bytes: lane 2j's 8 signed codes, then lane 2j + 1's.
qtiles::GroupSpan interleave(const LinearOperands& op, const uint8_t* panel, int64_t first, int64_t last,
                             uint8_t* scratch) {
  const int64_t gbytes = qtiles::group_bytes(op);
  const int64_t out_bytes = qtiles::unpacked_group_bytes(op);
  const bool int4 = op.codes == PanelCodes::kInt4;
  for (int64_t gi = first; gi < last; ++gi) {
    const uint8_t* group = panel + gi * gbytes;
    uint8_t* out = scratch + (gi - first) * out_bytes;
    std::memcpy(out, group, qtiles::kScaleBytes);
    const uint8_t* codes = group + qtiles::kScaleBytes;
    int8_t* pairs = reinterpret_cast<int8_t*>(out + qtiles::kScaleBytes);
    tiles::prefetch_lines<qtiles::kScaleBytes>(reinterpret_cast<const char*>(group) + tiles::kGemvPrefetchBytes);
    for (int64_t t = 0; t < op.group / 8; ++t) {
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
        int8_t* step = pairs + (t * kLanePairs + 2 * c) * kPairBytes;
        vst1q_s8(step, vreinterpretq_s8_s32(vzip1q_s32(low_words, high_words)));  // lanes 4c, 4c + 1
        vst1q_s8(step + kPairBytes, vreinterpretq_s8_s32(vzip2q_s32(low_words, high_words)));
      }
    }
  }
  return {scratch, out_bytes, first, last, 0};
}

// Rows m0 and m0 + 1 over an interleaved span, the float sums kept in registers across it and
// added to out (written, for the first span).
void mmla_pair(const LinearOperands& op, const qtiles::GroupSpan& span, int64_t m0, int64_t n0) {
  const QuantizedRows& xq = *op.x_quantized;
  const int64_t g = op.group;
  const int64_t cols = op.columns - n0 < kPanelColumns ? op.columns - n0 : kPanelColumns;
  Q::Reg acc[2][kR];
#pragma GCC unroll 2
  for (int r = 0; r < 2; ++r) {
    alignas(16) float partial[kPanelColumns] = {};
    if (span.first > 0) {
      std::memcpy(partial, op.out + (m0 + r) * op.columns + n0, static_cast<size_t>(cols) * sizeof(float));
    }
#pragma GCC unroll 8
    for (int c = 0; c < kR; ++c) {
      acc[r][c] = Q::load(tiles::F32{}, partial + c * Q::kWidth);
    }
  }
  const int8_t* x0 = xq.codes(m0);
  const int8_t* x1 = xq.codes(m0 + 1);
  for (int64_t gi = span.first; gi < span.last; ++gi) {
    const uint8_t* group_start = span.base + (gi - span.first) * span.stride;
    const int8_t* pairs = reinterpret_cast<const int8_t*>(group_start + qtiles::kScaleBytes);
    // sums[j] = [row 0 x lane 2j, row 0 x lane 2j + 1, row 1 x lane 2j, row 1 x lane 2j + 1].
    int32x4_t sums[kLanePairs];
#pragma GCC unroll 16
    for (int j = 0; j < kLanePairs; ++j) {
      sums[j] = vdupq_n_s32(0);
    }
    for (int64_t t = 0; t < g / 8; ++t) {
      const int8x16_t x = vcombine_s8(vld1_s8(x0 + gi * g + 8 * t), vld1_s8(x1 + gi * g + 8 * t));
#pragma GCC unroll 16
      for (int j = 0; j < kLanePairs; ++j) {
        sums[j] = vmmlaq_s32(sums[j], x, vld1q_s8(pairs + (t * kLanePairs + j) * kPairBytes));
      }
    }
    Q::IReg rows[2][kR];
#pragma GCC unroll 8
    for (int c = 0; c < kR; ++c) {
      const int64x2_t left = vreinterpretq_s64_s32(sums[2 * c]);
      const int64x2_t right = vreinterpretq_s64_s32(sums[2 * c + 1]);
      rows[0][c] = vreinterpretq_s32_s64(vzip1q_s64(left, right));
      rows[1][c] = vreinterpretq_s32_s64(vzip2q_s64(left, right));
    }
#pragma GCC unroll 2
    for (int r = 0; r < 2; ++r) {
      qtiles::scale_group<Q>(acc[r], rows[r], group_start, 0, xq.row_scales(m0 + r)[gi]);
    }
  }
#pragma GCC unroll 2
  for (int r = 0; r < 2; ++r) {
    tiles::store_panel<Q>(op, acc[r], op.out + (m0 + r) * op.columns, n0);
  }
}

// Rows m0 .. m0 + 3 over half a panel (lanes 16 * half .. 16 * half + 15) of an interleaved span:
// each lane pair's 16 bytes loaded once for two pairs of rows, 16 accumulators of 2 x 2 sums.
// A whole panel for one pair of rows loads once per smmla, which left the loads bounding the
// loop (0.66 of smmla's peak in llvm-mca's Neoverse V1 model, bench/neon_mca.py).
void mmla_quad(const LinearOperands& op, const qtiles::GroupSpan& span, int64_t m0, int64_t n0, int half) {
  constexpr int kHalfRegs = kR / 2;
  const QuantizedRows& xq = *op.x_quantized;
  const int64_t g = op.group;
  const int64_t first_column = n0 + half * kHalfRegs * Q::kWidth;
  const int64_t cols =
      op.columns - first_column < kHalfRegs * Q::kWidth ? op.columns - first_column : kHalfRegs * Q::kWidth;
  Q::Reg acc[4][kHalfRegs];
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {
    alignas(16) float partial[kHalfRegs * Q::kWidth] = {};
    if (span.first > 0) {
      std::memcpy(partial, op.out + (m0 + r) * op.columns + first_column, static_cast<size_t>(cols) * sizeof(float));
    }
#pragma GCC unroll 4
    for (int c = 0; c < kHalfRegs; ++c) {
      acc[r][c] = Q::load(tiles::F32{}, partial + c * Q::kWidth);
    }
  }
  const int8_t* x[4];
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {
    x[r] = xq.codes(m0 + r);
  }
  for (int64_t gi = span.first; gi < span.last; ++gi) {
    const uint8_t* group_start = span.base + (gi - span.first) * span.stride;
    const int8_t* pairs = reinterpret_cast<const int8_t*>(group_start + qtiles::kScaleBytes) + half * kR * kPairBytes;
    // sums[P][j]: rows 2P and 2P + 1 against the half's lane pair j, as mmla_pair's.
    int32x4_t sums[2][kR];
#pragma GCC unroll 2
    for (int pair = 0; pair < 2; ++pair) {
#pragma GCC unroll 8
      for (int j = 0; j < kR; ++j) {
        sums[pair][j] = vdupq_n_s32(0);
      }
    }
    for (int64_t t = 0; t < g / 8; ++t) {
      const int64_t k = gi * g + 8 * t;
      const int8x16_t upper = vcombine_s8(vld1_s8(x[0] + k), vld1_s8(x[1] + k));
      const int8x16_t lower = vcombine_s8(vld1_s8(x[2] + k), vld1_s8(x[3] + k));
#pragma GCC unroll 8
      for (int j = 0; j < kR; ++j) {
        const int8x16_t lanes = vld1q_s8(pairs + (t * kLanePairs + j) * kPairBytes);
        sums[0][j] = vmmlaq_s32(sums[0][j], upper, lanes);
        sums[1][j] = vmmlaq_s32(sums[1][j], lower, lanes);
      }
    }
    const uint16_t* scales = reinterpret_cast<const uint16_t*>(group_start) + half * kHalfRegs * Q::kWidth;
#pragma GCC unroll 2
    for (int pair = 0; pair < 2; ++pair) {
      const Q::Reg upper_scale = Q::set1(xq.row_scales(m0 + 2 * pair)[gi]);
      const Q::Reg lower_scale = Q::set1(xq.row_scales(m0 + 2 * pair + 1)[gi]);
#pragma GCC unroll 4
      for (int c = 0; c < kHalfRegs; ++c) {
        const int64x2_t left = vreinterpretq_s64_s32(sums[pair][2 * c]);
        const int64x2_t right = vreinterpretq_s64_s32(sums[pair][2 * c + 1]);
        const Q::Reg d = Q::load(tiles::F16{}, scales + c * Q::kWidth);
        // qtiles::scale_group's arithmetic, lane for lane.
        acc[2 * pair][c] = Q::fma(Q::to_float(vreinterpretq_s32_s64(vzip1q_s64(left, right)), 0),
                                  Q::mul(d, upper_scale), acc[2 * pair][c]);
        acc[2 * pair + 1][c] = Q::fma(Q::to_float(vreinterpretq_s32_s64(vzip2q_s64(left, right)), 0),
                                      Q::mul(d, lower_scale), acc[2 * pair + 1][c]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {
    alignas(16) float lanes[kHalfRegs * Q::kWidth];
#pragma GCC unroll 4
    for (int c = 0; c < kHalfRegs; ++c) {
      Q::store(lanes + c * Q::kWidth, acc[r][c]);
    }
    std::memcpy(op.out + (m0 + r) * op.columns + first_column, lanes, static_cast<size_t>(cols) * sizeof(float));
  }
}

// A chunk over panel p, a span of groups at a time: interleaved into `scratch` and read there by
// every pair of rows; an odd last row reads the span as stored, on sdot.
void gemm_panel(const LinearOperands& op, int64_t p, uint8_t* scratch) {
  const uint8_t* panel = static_cast<const uint8_t*>(op.weight) + p * op.panel_elements;
  const int64_t gbytes = qtiles::group_bytes(op);
  const int64_t groups = op.x_quantized->groups;
  const int64_t n0 = p * kPanelColumns;
  const int64_t per_span = qtiles::unpack_span_groups(op);
  for (int64_t first = 0; first < groups; first += per_span) {
    const int64_t last = first + per_span < groups ? first + per_span : groups;
    const qtiles::GroupSpan span = interleave(op, panel, first, last, scratch);
    int64_t m = 0;
    for (; m + 4 <= op.rows; m += 4) {
      mmla_quad(op, span, m, n0, 0);
      if (op.columns - n0 > kPanelColumns / 2) {
        mmla_quad(op, span, m, n0, 1);
      }
    }
    if (m + 2 <= op.rows) {
      mmla_pair(op, span, m, n0);
      m += 2;
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
  if (operands.rows <= qtiles::kStreamedQuantRows) {
    qtiles::quantized_columns<Q>(operands, n_begin, n_end, scratch);
    return;
  }
  const int64_t p_end = (n_end + kPanelColumns - 1) / kPanelColumns;
  for (int64_t p = n_begin / kPanelColumns; p < p_end; ++p) {
    gemm_panel(operands, p, reinterpret_cast<uint8_t*>(scratch));
  }
}

}  // namespace staticlm::cpu

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
