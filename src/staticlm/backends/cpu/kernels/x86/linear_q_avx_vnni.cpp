// SPDX-License-Identifier: Apache-2.0
// The int8 / int4 linear panels for AVX2 with AVX-VNNI (Intel cores from Alder Lake and
// Sapphire Rapids, AMD Zen 5): the VEX-encoded vpdpbusd sums four u8 x s8 products per 32-bit
// lane in one instruction, where the plain AVX2 kernel (linear_q_avx2.cpp) spends five on int8
// codes and two on int4 ones; the integer sums, and so the results, are the same. Chunks take
// one row per step, as on AVX2: 4 integer and 4 float accumulators, the weights and x's word in
// most of the other 8 registers.
#include <immintrin.h>

#include "staticlm/backends/cpu/kernels/quantized_rows.h"
#include "staticlm/backends/cpu/kernels/x86/linear_x86.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avxvnni")

#include "staticlm/backends/cpu/kernels/linear_quant_tiles.h"
#include "staticlm/backends/cpu/kernels/x86/simd_avx2.h"
#include "staticlm/backends/cpu/kernels/x86/simd_avx2_int.h"

namespace staticlm::cpu {
namespace {

struct Avx2Vnni : simd::Avx2IntBase {
  using XWord = __m256i;
  static constexpr int kQuantRows = 1;

  static XWord xword(int32_t word) { return _mm256_set1_epi32(word); }
  static IReg dot4(IReg acc, IReg w, XWord x) { return _mm256_dpbusd_avx_epi32(acc, w, x); }
  static IReg dot4_small(IReg acc, IReg w, XWord x) { return dot4(acc, w, x); }
};

}  // namespace

void linear_columns_q_avx_vnni(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch) {
  qtiles::quantized_columns<Avx2Vnni>(operands, n_begin, n_end, scratch);
}

}  // namespace staticlm::cpu

#pragma GCC pop_options
