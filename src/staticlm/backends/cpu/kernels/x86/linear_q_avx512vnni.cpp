// SPDX-License-Identifier: Apache-2.0
// The int8 / int4 linear panels for AVX-512 VNNI (simd_avx512_vnni.h).
// g++ 12 warns that the undefined-vector placeholders inside some AVX-512 intrinsics are
// uninitialised: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "staticlm/backends/cpu/kernels/quantized_rows.h"
#include "staticlm/backends/cpu/kernels/x86/linear_x86.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")

#include "staticlm/backends/cpu/kernels/linear_quant_tiles.h"
#include "staticlm/backends/cpu/kernels/x86/simd_avx512_vnni.h"

namespace staticlm::cpu {

void linear_columns_q_avx512vnni(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch) {
  qtiles::quantized_columns<simd::Avx512Vnni>(operands, n_begin, n_end, scratch);
}

}  // namespace staticlm::cpu

#pragma GCC pop_options
