// SPDX-License-Identifier: Apache-2.0
// The linear panels for AVX2 with FMA and F16C: 8 floats per register, a 32-column panel in
// four; GEMM micro-kernels of 6 rows x 16 columns, two per panel (12 accumulators of the 16
// registers).
#include <immintrin.h>

#include "staticlm/backends/cpu/kernels/x86/linear_x86.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

#include "staticlm/backends/cpu/kernels/linear_tiles.h"
#include "staticlm/backends/cpu/kernels/x86/simd_avx2.h"

namespace staticlm::cpu {

static_assert(simd::Avx2::kPanelRows == kAvxFloatBlockRows);

void linear_columns_avx2(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch) {
  tiles::linear_columns<simd::Avx2, 4>(operands, n_begin, n_end, scratch);
}

}  // namespace staticlm::cpu

#pragma GCC pop_options
