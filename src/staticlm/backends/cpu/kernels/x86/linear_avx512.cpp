// SPDX-License-Identifier: Apache-2.0
// The linear panels for AVX-512 (F, BW, VL, DQ with FMA and F16C): 16 floats per register, a
// 32-column panel in two; GEMM micro-kernels of 6 rows x 32 columns (12 accumulators); the
// GEMV streams four panels per thread on AMD and two on Intel, the count that decodes weights
// read from memory fastest on each vendor's cores (linear_bench gemv_* on the 2048 x 8192 and
// 4096 x 65536 shapes).
// g++ 12 warns that the undefined-vector placeholders inside some AVX-512 intrinsics
// (_mm512_cvtph_ps, _mm512_reduce_add_ps) are uninitialised: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "staticlm/backends/cpu/kernels/x86/linear_x86.h"
#include "staticlm/core/cpu_features.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")

#include "staticlm/backends/cpu/kernels/linear_tiles.h"
#include "staticlm/backends/cpu/kernels/x86/simd_avx512.h"

namespace staticlm::cpu {

static_assert(simd::Avx512::kPanelRows == kAvxFloatBlockRows);

void linear_columns_avx512(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch) {
  static const bool two_streams = cpu_vendor() == CpuVendor::kIntel;
  if (operands.rows == 1 && two_streams) {
    tiles::linear_columns<simd::Avx512, 2>(operands, n_begin, n_end, scratch);
    return;
  }
  tiles::linear_columns<simd::Avx512, 4>(operands, n_begin, n_end, scratch);
}

}  // namespace staticlm::cpu

#pragma GCC pop_options
