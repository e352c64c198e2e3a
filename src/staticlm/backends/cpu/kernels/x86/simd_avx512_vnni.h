// SPDX-License-Identifier: Apache-2.0
// The integer traits linear_quant_tiles.h is written over, for AVX-512 VNNI: 16 int32 lanes per
// register, vpdpbusd summing four u8 x s8 products per lane; chunks take 4 rows per step (8
// integer and 8 float accumulators of the 32 registers). Include only after a target pragma that
// has "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c" and after simd_avx512.h; its
// namespace is anonymous, as the float traits' is.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "staticlm/backends/cpu/kernels/x86/simd_avx512.h"

namespace staticlm::cpu::simd {
namespace {

struct Avx512Vnni : Avx512 {
  using IReg = __m512i;
  using XWord = __m512i;
  static constexpr int kQuantRows = 4;

  static IReg izero() { return _mm512_setzero_si512(); }
  static IReg iload(const uint8_t* p) { return _mm512_loadu_si512(p); }
  static void istore(uint8_t* p, IReg v) { _mm512_storeu_si512(p, v); }
  static XWord xword(int32_t word) { return _mm512_set1_epi32(word); }
  static IReg dot4(IReg acc, IReg w, XWord x) { return _mm512_dpbusd_epi32(acc, w, x); }
  static IReg dot4_small(IReg acc, IReg w, XWord x) { return dot4(acc, w, x); }
  static IReg low_nibbles(IReg w) { return _mm512_and_si512(w, _mm512_set1_epi8(0x0F)); }
  static IReg high_nibbles(IReg w) { return _mm512_and_si512(_mm512_srli_epi16(w, 4), _mm512_set1_epi8(0x0F)); }
  static Reg to_float(IReg acc, int32_t offset_sum) {
    return _mm512_cvtepi32_ps(_mm512_sub_epi32(acc, _mm512_set1_epi32(offset_sum)));
  }
};

}  // namespace
}  // namespace staticlm::cpu::simd
