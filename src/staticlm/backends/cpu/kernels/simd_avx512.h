// The AVX-512 traits the kernel templates are written over: F, BW, VL and DQ with FMA and F16C,
// 16 floats per register, tails by masked loads. Include only after
// `#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")`, in a file compiled for
// that set: the struct's members are compiled for it. Its namespace is anonymous, so each
// including file has its own copy and nothing links across files.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "staticlm/backends/cpu/kernels/simd_tags.h"

namespace staticlm::cpu::simd {
namespace {

struct Avx512 {
  using Reg = __m512;
  static constexpr int kWidth = 16;
  static constexpr int kTileRows = 4;

  static __mmask16 mask(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static Reg widen_bf16(__m256i bits) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
  }

  static constexpr int kPanelRows = 6;
  static Reg broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static void store(float* p, Reg r) { _mm512_storeu_ps(p, r); }
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static float hsum(Reg r) { return _mm512_reduce_add_ps(r); }

  static Reg load(tiles::F32, const float* p) { return _mm512_loadu_ps(p); }
  static Reg load(tiles::F16, const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static Reg load(tiles::Bf16, const uint16_t* p) {
    return widen_bf16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static Reg load_tail(tiles::F32, const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static Reg load_tail(tiles::F16, const uint16_t* p, int n) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask(n), p));
  }
  static Reg load_tail(tiles::Bf16, const uint16_t* p, int n) {
    return widen_bf16(_mm256_maskz_loadu_epi16(mask(n), p));
  }
};

}  // namespace
}  // namespace staticlm::cpu::simd
