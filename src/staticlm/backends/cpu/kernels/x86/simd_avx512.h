// SPDX-License-Identifier: Apache-2.0
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

  static __mmask16 mask(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static Reg widen_bf16(__m256i bits) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
  }

  static constexpr int kPanelRows = 6;  // 6 x 2 accumulators over one panel
  static constexpr int kPanelPasses = 1;
  static constexpr int kTileRegs = 2;   // an attention tile's queries: 32 ...
  static constexpr int kTileSteps = 8;  // ... against 8 slots or dimensions: 16 accumulators
  static constexpr int kPairRows = 6;   // 6 x 4 over two panels, beside 4 weight registers
  static constexpr int kPanelStep = 2;  // k values per step of the GEMM's loop (see panel_rows)
  // Accumulators a decode attention's weighted sum keeps (heads x registers of the head
  // dimension), beside the value row's registers and a broadcast.
  static constexpr int kSumAccumulators = 24;
  static Reg broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static void store(float* p, Reg r) { _mm512_storeu_ps(p, r); }
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  // Lane i of the result = the sum of r[i]'s lanes: 16 horizontal sums in a tree of 45
  // shuffles and adds (sixteen separate ones would take about three times as many).
  static Reg sum_each(const Reg r[16]);
  // r[i] lane j becomes r[j] lane i.
  static void transpose(Reg r[16]);
  // kWidth 32-bit words, each a bf16 pair: the low (even k) or high (odd k) halves, as f32.
  static Reg pair_lo(const uint32_t* p) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_loadu_si512(p), 16)); }
  static Reg pair_hi(const uint32_t* p) {
    return _mm512_castsi512_ps(
        _mm512_and_si512(_mm512_loadu_si512(p), _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
  }

  static Reg set1(float v) { return _mm512_set1_ps(v); }
  static Reg sub(Reg a, Reg b) { return _mm512_sub_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
  static Reg div(Reg a, Reg b) { return _mm512_div_ps(a, b); }
  static Reg min(Reg a, Reg b) { return _mm512_min_ps(a, b); }
  static Reg max(Reg a, Reg b) { return _mm512_max_ps(a, b); }
  // Lanewise a < b ? if_less : otherwise (false where either is NaN).
  static Reg select_less(Reg a, Reg b, Reg if_less, Reg otherwise) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), otherwise, if_less);
  }
  static Reg round(Reg a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // 2^n for integral n in [-126, 127], through the exponent bits.
  static Reg exp2_int(Reg n) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
  }
  static void store_tail(float* p, Reg r, int n) { _mm512_mask_storeu_ps(p, mask(n), r); }

  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static float hsum(Reg r) { return _mm512_reduce_add_ps(r); }

  static Reg load(tiles::F32, const float* p) { return _mm512_loadu_ps(p); }
  // An IEEE half as a float (F16C).
  static float f16_scalar(uint16_t bits) { return _cvtsh_ss(bits); }
  // kWidth int8 values as floats.
  static Reg widen_i8(const int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
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

// Its loops are unrolled: as loops at -O2, g++ kept the arrays in memory, and a decode
// attention's block scores stored every accumulator (attention_bench decode_*).
__attribute__((always_inline)) inline Avx512::Reg Avx512::sum_each(const Reg r[16]) {
  Reg pairs[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {  // per 128-bit lane: r[2i] and r[2i+1] half-summed, interleaved
    pairs[i] = _mm512_add_ps(_mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]), _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]));
  }
  Reg quads[4];
#pragma GCC unroll 8
  for (int i = 0; i < 4; ++i) {  // per 128-bit lane: the lane sums of r[4i .. 4i+3]
    quads[i] = _mm512_add_ps(_mm512_shuffle_ps(pairs[2 * i], pairs[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(pairs[2 * i], pairs[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  Reg halves[2];
#pragma GCC unroll 8
  for (int i = 0; i < 2; ++i) {  // the 128-bit lanes summed in pairs
    halves[i] = _mm512_add_ps(_mm512_shuffle_f32x4(quads[2 * i], quads[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                              _mm512_shuffle_f32x4(quads[2 * i], quads[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  }
  return _mm512_add_ps(_mm512_shuffle_f32x4(halves[0], halves[1], _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(halves[0], halves[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

__attribute__((always_inline)) inline void Avx512::transpose(Reg r[16]) {
  Reg t[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {  // rows 2i and 2i+1 interleaved, per 128-bit lane
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  Reg u[16];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {  // u[4i + c], 128-bit lane l: column 4l + c of rows 4i .. 4i+3
    u[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  Reg w[16];
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i) {  // the 128-bit lanes of rows 8i .. 8i+3 and 8i+4 .. 8i+7 paired
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      w[8 * i + c] = _mm512_shuffle_f32x4(u[8 * i + c], u[8 * i + 4 + c], _MM_SHUFFLE(2, 0, 2, 0));
      w[8 * i + 4 + c] = _mm512_shuffle_f32x4(u[8 * i + c], u[8 * i + 4 + c], _MM_SHUFFLE(3, 1, 3, 1));
    }
  }
#pragma GCC unroll 8
  for (int c = 0; c < 8; ++c) {  // then rows 0 .. 7 with rows 8 .. 15
    r[c] = _mm512_shuffle_f32x4(w[c], w[8 + c], _MM_SHUFFLE(2, 0, 2, 0));
    r[c + 8] = _mm512_shuffle_f32x4(w[c], w[8 + c], _MM_SHUFFLE(3, 1, 3, 1));
  }
}

}  // namespace
}  // namespace staticlm::cpu::simd
