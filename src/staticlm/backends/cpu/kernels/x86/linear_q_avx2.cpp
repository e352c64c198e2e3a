// SPDX-License-Identifier: Apache-2.0
// The int8 / int4 linear panels for AVX2: vpdpbusd's products, exactly, without VNNI. Each
// 32-bit lane's four u8 weight codes split into its even and odd bytes as 16-bit values, the x
// codes sign-extended the same way, and vpmaddwd sums each pair into int32: u8 x s8 products of
// at most 255 x 127 never saturate (vpmaddubsw's int16 sums would). int4 codes (0..15) cannot
// saturate vpmaddubsw (two products sum to at most 2 x 15 x 127), so they take it: two
// instructions per word and lane instead of five. Chunks take one row per step
// (4 integer and 4 float accumulators, the weights and x halves fill the other 8 registers); a
// panel's span of groups stays in L1 across the rows.
#include <immintrin.h>

#include "staticlm/backends/cpu/kernels/quantized_rows.h"
#include "staticlm/backends/cpu/kernels/x86/linear_x86.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

#include "staticlm/backends/cpu/kernels/linear_quant_tiles.h"
#include "staticlm/backends/cpu/kernels/x86/simd_avx2.h"
#include "staticlm/backends/cpu/kernels/x86/simd_avx2_int.h"

namespace staticlm::cpu {
namespace {

struct Avx2Int : simd::Avx2IntBase {
  // A word of four x codes in every lane, and as its even and odd bytes, each sign-extended to
  // 16 bits.
  struct XWord {
    __m256i bytes;
    __m256i even;
    __m256i odd;
  };
  static constexpr int kQuantRows = 1;

  static XWord xword(int32_t word) {
    const __m256i bytes = _mm256_set1_epi32(word);
    return {bytes, _mm256_srai_epi16(_mm256_slli_epi16(bytes, 8), 8), _mm256_srai_epi16(bytes, 8)};
  }
  static IReg dot4(IReg acc, IReg w, const XWord& x) {
    const __m256i even = _mm256_and_si256(w, _mm256_set1_epi16(0x00FF));
    const __m256i odd = _mm256_srli_epi16(w, 8);
    return _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_madd_epi16(even, x.even), _mm256_madd_epi16(odd, x.odd)));
  }
  // dot4 for weight codes below 128, whose two products per 16-bit sum fit in int16.
  static IReg dot4_small(IReg acc, IReg w, const XWord& x) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(w, x.bytes), _mm256_set1_epi16(1)));
  }
};

}  // namespace

void linear_columns_q_avx2(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch) {
  qtiles::quantized_columns<Avx2Int>(operands, n_begin, n_end, scratch);
}

}  // namespace staticlm::cpu

#pragma GCC pop_options
