// SPDX-License-Identifier: Apache-2.0
// What the AVX2 integer traits linear_quant_tiles.h is written over share (linear_q_avx2.cpp,
// linear_q_avx_vnni.cpp): 8 int32 lanes per register, loads and stores, int4 nibbles as bytes,
// and a lane's integer sum into a float. Each derived traits type adds its XWord, dot4,
// dot4_small and kQuantRows. Include only after a target pragma that has "avx2,fma,f16c" and
// after simd_avx2.h; its namespace is anonymous, as the float traits' is.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "staticlm/backends/cpu/kernels/x86/simd_avx2.h"

namespace staticlm::cpu::simd {
namespace {

struct Avx2IntBase : Avx2 {
  using IReg = __m256i;

  static IReg izero() { return _mm256_setzero_si256(); }
  static IReg iload(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static void istore(uint8_t* p, IReg v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static IReg low_nibbles(IReg w) { return _mm256_and_si256(w, _mm256_set1_epi8(0x0F)); }
  static IReg high_nibbles(IReg w) { return _mm256_and_si256(_mm256_srli_epi16(w, 4), _mm256_set1_epi8(0x0F)); }
  static Reg to_float(IReg acc, int32_t offset_sum) {
    return _mm256_cvtepi32_ps(_mm256_sub_epi32(acc, _mm256_set1_epi32(offset_sum)));
  }
};

}  // namespace
}  // namespace staticlm::cpu::simd
