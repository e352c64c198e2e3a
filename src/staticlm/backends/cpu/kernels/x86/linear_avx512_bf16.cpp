// SPDX-License-Identifier: Apache-2.0
// The bf16 GEMM for AVX-512 BF16: a bf16 panel32 weight stores each column's k pairs as one
// 32-bit word, 32 columns per line, which is the operand vdpbf16ps takes: each step of the 8 x 32
// micro-kernel multiplies one pair of K per lane, 32 multiply-adds per instruction, straight from
// the panel. x is rounded to bf16 once per call by the caller (round_to_bf16_avx512bf16).
// g++ 12 warns that the undefined-vector placeholders inside some AVX-512 intrinsics
// (_mm512_cvtph_ps, _mm512_reduce_add_ps) are uninitialised: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "staticlm/backends/cpu/kernels/x86/linear_x86.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")

#include "staticlm/backends/cpu/kernels/x86/simd_avx512.h"

namespace staticlm::cpu {
namespace {

using simd::Avx512;

constexpr int kRows = static_cast<int>(kPackedBlockRows);  // 16 accumulators: 128-row chunks split evenly
constexpr int64_t kPairBlock = 128;                        // pairs of K per panel block (linear_bench gemm_bf16_*)

template <int ROWS>
void pair_rows(const LinearOperands& op, const uint32_t* panel, int64_t m0, int64_t n0, int64_t p0, int64_t pairs) {
  const int64_t cols = op.columns - n0 < kPanelColumns ? op.columns - n0 : kPanelColumns;
  const bool full = cols == kPanelColumns;
  __m512 acc[ROWS][2];
  alignas(64) float partial[kPanelColumns];
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    float* out = op.out + (m0 + r) * op.columns + n0;
    acc[r][0] = _mm512_setzero_ps();
    acc[r][1] = _mm512_setzero_ps();
    if (p0 == 0) {
      continue;
    }
    if (!full) {
      for (int64_t j = 0; j < kPanelColumns; ++j) {
        partial[j] = j < cols ? out[j] : 0.0f;
      }
      out = partial;
    }
    acc[r][0] = _mm512_loadu_ps(out);
    acc[r][1] = _mm512_loadu_ps(out + 16);
  }
  const uint32_t* x[ROWS];
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    x[r] = reinterpret_cast<const uint32_t*>(op.x_bf16 + (m0 + r) * op.inner) + p0;
  }
  for (int64_t p = 0; p < pairs; ++p) {
    const __m512bh w0 = (__m512bh)_mm512_loadu_si512(panel + p * kPanelColumns);
    const __m512bh w1 = (__m512bh)_mm512_loadu_si512(panel + p * kPanelColumns + 16);
#pragma GCC unroll 16
    for (int r = 0; r < ROWS; ++r) {
      const __m512bh b = (__m512bh)_mm512_set1_epi32(static_cast<int>(x[r][p]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], b, w0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], b, w1);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    float* out = op.out + (m0 + r) * op.columns + n0;
    float* target = full ? out : partial;
    _mm512_storeu_ps(target, acc[r][0]);
    _mm512_storeu_ps(target + 16, acc[r][1]);
    if (!full) {
      for (int64_t j = 0; j < cols; ++j) {
        out[j] = partial[j];
      }
    }
  }
}

// Rows [m, rows), fewer than kRows, in one block of exactly that many: row by row, each would
// reread the whole panel.
template <int ROWS = 1>
void pair_tail(const LinearOperands& op, const uint32_t* panel, int64_t m, int64_t n0, int64_t p0, int64_t pairs) {
  if constexpr (ROWS < kRows) {
    if (op.rows - m == ROWS) {
      pair_rows<ROWS>(op, panel, m, n0, p0, pairs);
    } else {
      pair_tail<ROWS + 1>(op, panel, m, n0, p0, pairs);
    }
  }
}

// Panels [n_begin / 32, ceil(n_end / 32)), K in blocks of kPairBlock pairs (16 KiB of a panel,
// reused from L1 by every block of rows).
void bf16_gemm(const LinearOperands& op, int64_t n_begin, int64_t n_end) {
  const int64_t total_pairs = op.inner / 2;
  const int64_t panel_end = (n_end + kPanelColumns - 1) / kPanelColumns;
  for (int64_t panel = n_begin / kPanelColumns; panel < panel_end; ++panel) {
    const int64_t n0 = panel * kPanelColumns;
    const uint32_t* words = static_cast<const uint32_t*>(op.weight) + panel * (op.panel_elements / 2);
    for (int64_t p0 = 0; p0 < total_pairs; p0 += kPairBlock) {
      const int64_t pairs = total_pairs - p0 < kPairBlock ? total_pairs - p0 : kPairBlock;
      const uint32_t* block = words + p0 * kPanelColumns;
      int64_t m = 0;
      for (; m + kRows <= op.rows; m += kRows) {
        pair_rows<kRows>(op, block, m, n0, p0, pairs);
      }
      pair_tail(op, block, m, n0, p0, pairs);
    }
  }
}

}  // namespace

void linear_columns_avx512_bf16(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch) {
  // Whether x was rounded (a call of at least kPackedMinRows rows) decides, not the rows of this
  // slice of it: every slice of one call multiplies alike.
  if (operands.x_bf16 != nullptr && operands.weight_dtype == DType::kBF16 && operands.inner % 2 == 0) {
    bf16_gemm(operands, n_begin, n_end);
    return;
  }
  linear_columns_avx512(operands, n_begin, n_end, scratch);
}

void round_to_bf16_avx512bf16(const float* x, int64_t count, uint16_t* out) {
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(x + i)));
  }
  if (i < count) {
    const __mmask16 mask = Avx512::mask(static_cast<int>(count - i));
    _mm256_mask_storeu_epi16(out + i, mask, (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, x + i)));
  }
}

}  // namespace staticlm::cpu

#pragma GCC pop_options
