// SPDX-License-Identifier: Apache-2.0
// The bf16 linears for NEON with the bf16 extension (FEAT_BF16, Armv8.6: Neoverse V1 / N2,
// Cortex-A510 / A710 and later): x rounded to bf16 once per call (bfcvtn, to nearest even, as
// x86's vcvtneps2bf16), products of bf16 pairs summed in f32. A bf16 panel stores each column's k
// pairs as one 32-bit word, 32 columns per 128-byte pair row.
//
// Decode (one row) streams two panels at once with bfdot, which takes the words as stored: each
// lane's pair times x's pair broadcast (ld1r), 8 accumulators per panel, no horizontal sums.
//
// A chunk runs bfmmla, which multiplies a 2 x 4 block of bf16 (two rows of x, 4 k) by another's
// transpose (two columns, 4 k) into a 2 x 2 block of f32 sums: 16 products per instruction where
// bfdot has 8. Its column operand is two pair rows' words zipped (vzip1q / vzip2q_u32: column c's
// k 0-3, then c + 1's), so each K block of a panel (128 pairs, 16 KiB) is zipped once into the
// per-thread buffer, 2 zips per 4 columns x 4 k (one per bfmmla operand, against 2 loads), and
// every block of rows reads it with plain loads. Per K step of 4: 4 rows by half a panel,
// 16 accumulators (2 row pairs x 8 column pairs), 8 loads of the buffer, 4 of x (d registers),
// 16 bfmmla. The weights stay as exported.
#include <arm_neon.h>

#include <cstring>

#include "staticlm/backends/cpu/kernels/arm/linear_arm.h"

// Everything used below is included above, so nothing inline from the standard library is
// compiled for bf16 and merged into callers that run on any AArch64 CPU.
// Clang (the Android NDK's compiler) takes its own form of the same region.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("bf16"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+bf16")
#endif

namespace staticlm::cpu {
namespace {

constexpr int64_t kBlockPairs = 128;                     // pairs of K per panel block: 16 KiB, in L1
constexpr int64_t kStepColumnPairs = kPanelColumns / 2;  // bfmmla column operands per K step of 4
constexpr int64_t kHalfColumns = kPanelColumns / 2;      // a micro-kernel's columns
constexpr int kRowPairs = static_cast<int>(kNeonBf16BlockRows / 2);
constexpr int64_t kGemvPrefetchBytes = 2048;  // as the NEON GEMV: lines 2 KiB ahead of the loads

static_assert(kLinearScratchFloats * sizeof(float) >= kBlockPairs * kPanelColumns * 2 * sizeof(uint16_t));

inline bfloat16x8_t as_bf16(uint32x4_t words) {
  return vreinterpretq_bf16_u32(words);
}

// `cols` (<= kPanelColumns) of out from 8 registers, through a copy where the panel is partial.
inline void store_panel(float* out, const float32x4_t acc[8], int64_t cols) {
  if (cols == kPanelColumns) {
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      vst1q_f32(out + 4 * c, acc[c]);
    }
    return;
  }
  alignas(16) float partial[kPanelColumns];
#pragma GCC unroll 8
  for (int c = 0; c < 8; ++c) {
    vst1q_f32(partial + 4 * c, acc[c]);
  }
  std::memcpy(out, partial, static_cast<size_t>(cols) * sizeof(float));
}

// One row: panels [first, last) of `op`, two at a time (one stream each), every pair of K a
// bfdot per 4 columns.
void bfdot_gemv(const LinearOperands& op, int64_t first, int64_t last) {
  const int64_t pairs = op.inner / 2;
  const uint32_t* x = reinterpret_cast<const uint32_t*>(op.x_bf16);
  const uint16_t* weights = static_cast<const uint16_t*>(op.weight);
  int64_t panel = first;
  for (; panel + 2 <= last; panel += 2) {
    const uint32_t* w0 = reinterpret_cast<const uint32_t*>(weights + panel * op.panel_elements);
    const uint32_t* w1 = reinterpret_cast<const uint32_t*>(weights + (panel + 1) * op.panel_elements);
    float32x4_t acc0[8], acc1[8];
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      acc0[c] = vdupq_n_f32(0.0f);
      acc1[c] = vdupq_n_f32(0.0f);
    }
    for (int64_t p = 0; p < pairs; ++p) {
      const bfloat16x8_t xp = as_bf16(vld1q_dup_u32(x + p));
      const uint32_t* row0 = w0 + p * kPanelColumns;
      const uint32_t* row1 = w1 + p * kPanelColumns;
      __builtin_prefetch(reinterpret_cast<const char*>(row0) + kGemvPrefetchBytes);
      __builtin_prefetch(reinterpret_cast<const char*>(row0) + kGemvPrefetchBytes + 64);
      __builtin_prefetch(reinterpret_cast<const char*>(row1) + kGemvPrefetchBytes);
      __builtin_prefetch(reinterpret_cast<const char*>(row1) + kGemvPrefetchBytes + 64);
#pragma GCC unroll 8
      for (int c = 0; c < 8; ++c) {
        acc0[c] = vbfdotq_f32(acc0[c], as_bf16(vld1q_u32(row0 + 4 * c)), xp);
        acc1[c] = vbfdotq_f32(acc1[c], as_bf16(vld1q_u32(row1 + 4 * c)), xp);
      }
    }
    const int64_t n0 = panel * kPanelColumns;
    store_panel(op.out + n0, acc0, kPanelColumns);
    const int64_t cols = op.columns - n0 - kPanelColumns;
    store_panel(op.out + n0 + kPanelColumns, acc1, cols < kPanelColumns ? cols : kPanelColumns);
  }
  if (panel < last) {
    const uint32_t* w0 = reinterpret_cast<const uint32_t*>(weights + panel * op.panel_elements);
    float32x4_t acc0[8];
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      acc0[c] = vdupq_n_f32(0.0f);
    }
    for (int64_t p = 0; p < pairs; ++p) {
      const bfloat16x8_t xp = as_bf16(vld1q_dup_u32(x + p));
      const uint32_t* row0 = w0 + p * kPanelColumns;
      __builtin_prefetch(reinterpret_cast<const char*>(row0) + kGemvPrefetchBytes);
      __builtin_prefetch(reinterpret_cast<const char*>(row0) + kGemvPrefetchBytes + 64);
#pragma GCC unroll 8
      for (int c = 0; c < 8; ++c) {
        acc0[c] = vbfdotq_f32(acc0[c], as_bf16(vld1q_u32(row0 + 4 * c)), xp);
      }
    }
    const int64_t n0 = panel * kPanelColumns;
    const int64_t cols = op.columns - n0;
    store_panel(op.out + n0, acc0, cols < kPanelColumns ? cols : kPanelColumns);
  }
}

// Pairs [p0, p0 + pairs) of a panel's words into `zipped`: per K step of 4 (pair rows 2t and
// 2t + 1; a missing last one as zeros) and column pair j, 8 bf16: column 2j's k 0-3, then
// column 2j + 1's (bfmmla's column operand).
void zip_block(const uint32_t* panel, int64_t p0, int64_t pairs, uint32_t* zipped) {
  const int64_t steps = (pairs + 1) / 2;
  for (int64_t t = 0; t < steps; ++t) {
    const uint32_t* low_k = panel + (p0 + 2 * t) * kPanelColumns;
    const bool whole = 2 * t + 1 < pairs;
    uint32_t* out = zipped + t * kStepColumnPairs * 4;
#pragma GCC unroll 8
    for (int c = 0; c < kPanelColumns / 4; ++c) {
      const uint32x4_t low = vld1q_u32(low_k + 4 * c);
      const uint32x4_t high = whole ? vld1q_u32(low_k + kPanelColumns + 4 * c) : vdupq_n_u32(0);
      vst1q_u32(out + 8 * c, vzip1q_u32(low, high));  // columns 4c, 4c + 1
      vst1q_u32(out + 8 * c + 4, vzip2q_u32(low, high));
    }
  }
}

// x's 4 k from `k` of one row: the last step of an odd count of pairs has 2 (the rest zero: the
// row may end there).
inline bfloat16x4_t x_step(const uint16_t* row, int64_t k, bool whole) {
  if (whole) {
    return vld1_bf16(reinterpret_cast<const bfloat16_t*>(row + k));
  }
  uint32_t pair;
  std::memcpy(&pair, row + k, sizeof(pair));
  return vreinterpret_bf16_u64(vcreate_u64(pair));
}

// One K step of 4 (2 with `whole` false) at `k` of the rows `x` (two pairs) by 8 column pairs of
// `step`, the zipped block's operands: the micro-kernel's inner loop.
__attribute__((always_inline)) inline void bfmmla_step(float32x4_t (&acc)[kRowPairs][8],
                                                       const uint16_t* const (&x)[2 * kRowPairs], int64_t k,
                                                       const uint32_t* step, bool whole) {
  bfloat16x8_t a[kRowPairs];
#pragma GCC unroll 2
  for (int i = 0; i < kRowPairs; ++i) {
    a[i] = vcombine_bf16(x_step(x[2 * i], k, whole), x_step(x[2 * i + 1], k, whole));
  }
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) {
    const bfloat16x8_t b = as_bf16(vld1q_u32(step + 4 * j));
#pragma GCC unroll 2
    for (int i = 0; i < kRowPairs; ++i) {
      acc[i][j] = vbfmmlaq_f32(acc[i][j], a[i], b);
    }
  }
}

// Rows [m0, m0 + count) (count <= kNeonBf16BlockRows; missing rows repeat the last one and are
// not stored) by columns [h0, h0 + 16) of the panel at n0, over a zipped block of `pairs` pairs
// from p0, added to out unless p0 is 0.
void bfmmla_rows(const LinearOperands& op, const uint32_t* zipped, int64_t m0, int count, int64_t n0, int64_t h0,
                 int64_t p0, int64_t pairs) {
  const int64_t valid = op.columns - n0 - h0;
  const int64_t cols = valid < kHalfColumns ? valid : kHalfColumns;
  const uint16_t* x[2 * kRowPairs];
#pragma GCC unroll 4
  for (int r = 0; r < 2 * kRowPairs; ++r) {
    x[r] = op.x_bf16 + (m0 + (r < count ? r : count - 1)) * op.inner + 2 * p0;
  }
  // acc[i][j]: rows 2i, 2i + 1 by columns h0 + 2j, h0 + 2j + 1, as bfmmla lays them out.
  float32x4_t acc[kRowPairs][8];
#pragma GCC unroll 2
  for (int i = 0; i < kRowPairs; ++i) {
    if (p0 == 0) {
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        acc[i][j] = vdupq_n_f32(0.0f);
      }
      continue;
    }
    alignas(16) float rows[2][kHalfColumns] = {};
#pragma GCC unroll 2
    for (int r = 0; r < 2; ++r) {
      if (2 * i + r < count) {
        std::memcpy(rows[r], op.out + (m0 + 2 * i + r) * op.columns + n0 + h0, static_cast<size_t>(cols) * 4);
      }
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const float64x2_t top = vreinterpretq_f64_f32(vld1q_f32(rows[0] + 4 * c));
      const float64x2_t bottom = vreinterpretq_f64_f32(vld1q_f32(rows[1] + 4 * c));
      acc[i][2 * c] = vreinterpretq_f32_f64(vzip1q_f64(top, bottom));
      acc[i][2 * c + 1] = vreinterpretq_f32_f64(vzip2q_f64(top, bottom));
    }
  }
  const uint32_t* half = zipped + h0 / 2 * 4;
  const int64_t whole_steps = pairs / 2;
  for (int64_t t = 0; t < whole_steps; ++t) {
    bfmmla_step(acc, x, 4 * t, half + t * kStepColumnPairs * 4, true);
  }
  if (pairs % 2 != 0) {
    bfmmla_step(acc, x, 4 * whole_steps, half + whole_steps * kStepColumnPairs * 4, false);
  }
#pragma GCC unroll 2
  for (int i = 0; i < kRowPairs; ++i) {
    alignas(16) float rows[2][kHalfColumns];
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const float64x2_t left = vreinterpretq_f64_f32(acc[i][2 * c]);
      const float64x2_t right = vreinterpretq_f64_f32(acc[i][2 * c + 1]);
      vst1q_f32(rows[0] + 4 * c, vreinterpretq_f32_f64(vzip1q_f64(left, right)));
      vst1q_f32(rows[1] + 4 * c, vreinterpretq_f32_f64(vzip2q_f64(left, right)));
    }
#pragma GCC unroll 2
    for (int r = 0; r < 2; ++r) {
      if (2 * i + r < count) {
        std::memcpy(op.out + (m0 + 2 * i + r) * op.columns + n0 + h0, rows[r], static_cast<size_t>(cols) * 4);
      }
    }
  }
}

// Panels [first, last), K in blocks of kBlockPairs pairs, each zipped once into `scratch` and
// run by every block of rows, half a panel at a time.
void bfmmla_gemm(const LinearOperands& op, int64_t first, int64_t last, uint32_t* scratch) {
  const int64_t total_pairs = op.inner / 2;
  const uint16_t* weights = static_cast<const uint16_t*>(op.weight);
  for (int64_t panel = first; panel < last; ++panel) {
    const int64_t n0 = panel * kPanelColumns;
    const uint32_t* words = reinterpret_cast<const uint32_t*>(weights + panel * op.panel_elements);
    const int64_t halves = op.columns - n0 > kHalfColumns ? 2 : 1;
    for (int64_t p0 = 0; p0 < total_pairs; p0 += kBlockPairs) {
      const int64_t pairs = total_pairs - p0 < kBlockPairs ? total_pairs - p0 : kBlockPairs;
      zip_block(words, p0, pairs, scratch);
      for (int64_t m = 0; m < op.rows; m += kNeonBf16BlockRows) {
        const int count = static_cast<int>(op.rows - m < kNeonBf16BlockRows ? op.rows - m : kNeonBf16BlockRows);
        for (int64_t h = 0; h < halves; ++h) {
          bfmmla_rows(op, scratch, m, count, n0, h * kHalfColumns, p0, pairs);
        }
      }
    }
  }
}

}  // namespace

void linear_columns_bf16(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch) {
  // x is rounded for every call of the entry (its rounding has no minimum of rows); without it
  // (nothing calls so today) the f32 kernels run.
  if (operands.x_bf16 == nullptr || operands.weight_dtype != DType::kBF16 || operands.inner % 2 != 0) {
    linear_columns_neon(operands, n_begin, n_end, scratch);
    return;
  }
  const int64_t first = n_begin / kPanelColumns;
  const int64_t last = (n_end + kPanelColumns - 1) / kPanelColumns;
  if (operands.rows == 1) {
    bfdot_gemv(operands, first, last);
  } else {
    bfmmla_gemm(operands, first, last, reinterpret_cast<uint32_t*>(scratch));
  }
}

void round_to_bf16_neon(const float* x, int64_t count, uint16_t* out) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const bfloat16x8_t low = vcvtq_low_bf16_f32(vld1q_f32(x + i));
    vst1q_bf16(reinterpret_cast<bfloat16_t*>(out + i), vcvtq_high_bf16_f32(low, vld1q_f32(x + i + 4)));
  }
  if (i < count) {
    // Through a zero-padded copy, as NEON has no masked loads.
    alignas(16) float lanes[8] = {};
    alignas(16) uint16_t rounded[8];
    const auto n = static_cast<size_t>(count - i);
    std::memcpy(lanes, x + i, n * sizeof(float));
    const bfloat16x8_t low = vcvtq_low_bf16_f32(vld1q_f32(lanes));
    vst1q_bf16(reinterpret_cast<bfloat16_t*>(rounded), vcvtq_high_bf16_f32(low, vld1q_f32(lanes + 4)));
    std::memcpy(out + i, rounded, n * sizeof(uint16_t));
  }
}

}  // namespace staticlm::cpu

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
