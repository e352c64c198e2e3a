// SPDX-License-Identifier: Apache-2.0
// The AVX2 traits the kernel templates are written over: AVX2 with FMA and F16C, 8 floats per
// register, tails by masked loads (f32) or a zero-padded copy. Include only after
// `#pragma GCC target("avx2,fma,f16c")`, in a file compiled for that set: the struct's members
// are compiled for it. Its namespace is anonymous, so each including file has its own copy and
// nothing links across files.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "staticlm/backends/cpu/kernels/simd_tags.h"

namespace staticlm::cpu::simd {
namespace {

struct Avx2 {
  using Reg = __m256;
  static constexpr int kWidth = 8;

  static __m128i copy_tail(const uint16_t* p, int n) {
    alignas(16) uint16_t padded[8] = {};
    for (int i = 0; i < n; ++i) {
      padded[i] = p[i];
    }
    return _mm_load_si128(reinterpret_cast<const __m128i*>(padded));
  }
  static Reg widen_bf16(__m128i bits) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
  }

  static constexpr int kPanelRows = 6;    // 6 x 2 accumulators over half a panel ...
  static constexpr int kPanelPasses = 2;  // ... then over the other half
  static constexpr int kTileRegs = 2;     // an attention tile's queries: 16 ...
  static constexpr int kTileSteps = 6;    // ... against 6 slots or dimensions: 12 accumulators
  static constexpr int kPairRows = 0;     // two panels would need more than 16 registers
  static constexpr int kPanelStep = 1;    // two or four k a step spilled accumulators
  // Accumulators a decode attention's weighted sum keeps (heads x registers of the head
  // dimension), beside the value row's registers and a broadcast.
  static constexpr int kSumAccumulators = 10;
  static Reg broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static void store(float* p, Reg r) { _mm256_storeu_ps(p, r); }
  static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  // Lane i of the result = the sum of r[i]'s lanes, in a tree of shuffles and adds.
  static Reg sum_each(const Reg r[8]);
  // r[i] lane j becomes r[j] lane i.
  static void transpose(Reg r[8]);
  // kWidth 32-bit words, each a bf16 pair: the low (even k) or high (odd k) halves, as f32.
  static Reg pair_lo(const uint32_t* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), 16));
  }
  static Reg pair_hi(const uint32_t* p) {
    return _mm256_castsi256_ps(_mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)),
                                                _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
  }

  static Reg set1(float v) { return _mm256_set1_ps(v); }
  static Reg sub(Reg a, Reg b) { return _mm256_sub_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  static Reg div(Reg a, Reg b) { return _mm256_div_ps(a, b); }
  static Reg min(Reg a, Reg b) { return _mm256_min_ps(a, b); }
  static Reg max(Reg a, Reg b) { return _mm256_max_ps(a, b); }
  // Lanewise a < b ? if_less : otherwise (false where either is NaN).
  static Reg select_less(Reg a, Reg b, Reg if_less, Reg otherwise) {
    return _mm256_blendv_ps(otherwise, if_less, _mm256_cmp_ps(a, b, _CMP_LT_OQ));
  }
  static Reg round(Reg a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // 2^n for integral n in [-126, 127], through the exponent bits.
  static Reg exp2_int(Reg n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
  }
  static void store_tail(float* p, Reg r, int n) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    _mm256_maskstore_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lanes), r);
  }

  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static float hsum(Reg r) {
    __m128 sum = _mm_add_ps(_mm256_castps256_ps128(r), _mm256_extractf128_ps(r, 1));
    sum = _mm_add_ps(sum, _mm_movehl_ps(sum, sum));
    sum = _mm_add_ss(sum, _mm_movehdup_ps(sum));
    return _mm_cvtss_f32(sum);
  }

  static Reg load(tiles::F32, const float* p) { return _mm256_loadu_ps(p); }
  static Reg load(tiles::F16, const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  // An IEEE half as a float (F16C).
  static float f16_scalar(uint16_t bits) { return _cvtsh_ss(bits); }
  // kWidth int8 values as floats.
  static Reg widen_i8(const int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static Reg load(tiles::Bf16, const uint16_t* p) {
    return widen_bf16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static Reg load_tail(tiles::F32, const float* p, int n) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lanes));
  }
  static Reg load_tail(tiles::F16, const uint16_t* p, int n) { return _mm256_cvtph_ps(copy_tail(p, n)); }
  static Reg load_tail(tiles::Bf16, const uint16_t* p, int n) { return widen_bf16(copy_tail(p, n)); }
};

// Its loops are unrolled: as loops at -O2, g++ kept the arrays in memory, and a decode
// attention's block scores stored every accumulator (attention_bench decode_*).
__attribute__((always_inline)) inline Avx2::Reg Avx2::sum_each(const Reg r[8]) {
  Reg pairs[4];
#pragma GCC unroll 8
  for (int i = 0; i < 4; ++i) {  // per 128-bit lane: r[2i] and r[2i+1] half-summed, interleaved
    pairs[i] = _mm256_add_ps(_mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]), _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]));
  }
  Reg quads[2];
#pragma GCC unroll 8
  for (int i = 0; i < 2; ++i) {  // per 128-bit lane: the lane sums of r[4i .. 4i+3]
    quads[i] = _mm256_add_ps(_mm256_shuffle_ps(pairs[2 * i], pairs[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm256_shuffle_ps(pairs[2 * i], pairs[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  return _mm256_add_ps(_mm256_permute2f128_ps(quads[0], quads[1], 0x20),
                       _mm256_permute2f128_ps(quads[0], quads[1], 0x31));
}

__attribute__((always_inline)) inline void Avx2::transpose(Reg r[8]) {
  Reg t[8];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {  // rows 2i and 2i+1 interleaved, per 128-bit lane
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  Reg u[8];
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i) {  // u[4i + c], 128-bit lane l: column 4l + c of rows 4i .. 4i+3
    u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {  // the 128-bit lanes of rows 0 .. 3 and 4 .. 7 paired
    r[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
    r[c + 4] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
  }
}

}  // namespace
}  // namespace staticlm::cpu::simd
