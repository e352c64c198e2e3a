// SPDX-License-Identifier: Apache-2.0
// The NEON traits the kernel templates are written over: Armv8.0 Advanced SIMD, 4 floats per
// register, 32 registers; f16 widened by fcvtl (the conversions are baseline AArch64, the f16
// arithmetic of asimdhp is not used), bf16 by a shift; tails through a zero-padded copy, as NEON
// has no masked loads. Every AArch64 CPU has it, so the files including it need no target pragma
// (the dotprod / i8mm ones add theirs). Its namespace is anonymous, so each including file has
// its own copy and nothing links across files.
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#include "staticlm/backends/cpu/kernels/simd_tags.h"

namespace staticlm::cpu::simd {
namespace {

struct Neon {
  using Reg = float32x4_t;
  static constexpr int kWidth = 4;

  // 5 rows x 4 registers over a half panel's 16 columns, then the other half: 20 accumulators,
  // 4 weight registers and the rows' 5 x values (g++ multiplies by element, each x value in a
  // register of its own). 6 rows would take 34 registers, and g++ spilled accumulators (a store
  // and a load on their multiply-add chains); a whole panel (8 registers) a pass leaves room
  // for 3 rows only.
  static constexpr int kPanelRows = 5;
  static constexpr int kPanelPasses = 2;
  static constexpr int kPairRows = 0;  // two panels are 16 registers a row
  static constexpr int kPanelStep = 1;
  static constexpr int kTileRegs = 4;   // an attention tile's queries: 16 ...
  static constexpr int kTileSteps = 6;  // ... against 6 slots or dimensions: 24 accumulators
  // Accumulators a decode attention's weighted sum keeps (heads x registers of the head
  // dimension), beside the value row's registers and a broadcast.
  static constexpr int kSumAccumulators = 24;

  static Reg zero() { return vdupq_n_f32(0.0f); }
  static Reg set1(float v) { return vdupq_n_f32(v); }
  static Reg broadcast(const float* p) { return vld1q_dup_f32(p); }
  static Reg fma(Reg a, Reg b, Reg c) { return vfmaq_f32(c, a, b); }
  static Reg add(Reg a, Reg b) { return vaddq_f32(a, b); }
  static Reg sub(Reg a, Reg b) { return vsubq_f32(a, b); }
  static Reg mul(Reg a, Reg b) { return vmulq_f32(a, b); }
  static Reg div(Reg a, Reg b) { return vdivq_f32(a, b); }
  static Reg min(Reg a, Reg b) { return vminq_f32(a, b); }
  static Reg max(Reg a, Reg b) { return vmaxq_f32(a, b); }
  // Lanewise a < b ? if_less : otherwise (false where either is NaN).
  static Reg select_less(Reg a, Reg b, Reg if_less, Reg otherwise) {
    return vbslq_f32(vcltq_f32(a, b), if_less, otherwise);
  }
  static Reg round(Reg a) { return vrndnq_f32(a); }  // to nearest, ties to even
  // 2^n for integral n in [-126, 127], through the exponent bits.
  static Reg exp2_int(Reg n) {
    return vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23));
  }
  static float hsum(Reg r) { return vaddvq_f32(r); }

  // Lane i of the result = the sum of r[i]'s lanes: two rounds of pairwise adds.
  static Reg sum_each(const Reg r[4]) { return vpaddq_f32(vpaddq_f32(r[0], r[1]), vpaddq_f32(r[2], r[3])); }
  // r[i] lane j becomes r[j] lane i.
  static void transpose(Reg r[4]) {
    const float32x4_t t0 = vtrn1q_f32(r[0], r[1]);  // r0[0] r1[0] r0[2] r1[2]
    const float32x4_t t1 = vtrn2q_f32(r[0], r[1]);  // r0[1] r1[1] r0[3] r1[3]
    const float32x4_t t2 = vtrn1q_f32(r[2], r[3]);
    const float32x4_t t3 = vtrn2q_f32(r[2], r[3]);
    r[0] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
    r[1] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
    r[2] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
    r[3] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
  }

  static Reg widen_f16(uint16x4_t bits) { return vcvt_f32_f16(vreinterpret_f16_u16(bits)); }
  static Reg widen_bf16(uint16x4_t bits) { return vreinterpretq_f32_u32(vshll_n_u16(bits, 16)); }
  // kWidth 32-bit words, each a bf16 pair: the low (even k) or high (odd k) halves, as f32.
  static Reg pair_lo(const uint32_t* p) { return vreinterpretq_f32_u32(vshlq_n_u32(vld1q_u32(p), 16)); }
  static Reg pair_hi(const uint32_t* p) {
    return vreinterpretq_f32_u32(vandq_u32(vld1q_u32(p), vdupq_n_u32(0xFFFF0000u)));
  }

  static Reg load(tiles::F32, const float* p) { return vld1q_f32(p); }
  static Reg load(tiles::F16, const uint16_t* p) { return widen_f16(vld1_u16(p)); }
  // An IEEE half as a float.
  static float f16_scalar(uint16_t bits) {
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(bits))), 0);
  }
  // kWidth int8 values as floats.
  static Reg widen_i8(const int8_t* p) {
    int32_t bytes = 0;
    __builtin_memcpy(&bytes, p, sizeof(bytes));
    const int16x8_t wide = vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(bytes)));
    return vcvtq_f32_s32(vmovl_s16(vget_low_s16(wide)));
  }
  static Reg load(tiles::Bf16, const uint16_t* p) { return widen_bf16(vld1_u16(p)); }
  static void store(float* p, Reg r) { vst1q_f32(p, r); }

  // The first n < kWidth lanes, the rest zero: through a copy, as reading a whole register past
  // the end could cross into an unmapped page.
  static Reg load_tail(tiles::F32, const float* p, int n) {
    alignas(16) float lanes[kWidth] = {};
    std::memcpy(lanes, p, static_cast<size_t>(n) * sizeof(float));
    return vld1q_f32(lanes);
  }
  static Reg load_tail(tiles::F16, const uint16_t* p, int n) { return widen_f16(tail_bits(p, n)); }
  static Reg load_tail(tiles::Bf16, const uint16_t* p, int n) { return widen_bf16(tail_bits(p, n)); }
  static uint16x4_t tail_bits(const uint16_t* p, int n) {
    alignas(8) uint16_t lanes[kWidth] = {};
    std::memcpy(lanes, p, static_cast<size_t>(n) * sizeof(uint16_t));
    return vld1_u16(lanes);
  }
  static void store_tail(float* p, Reg r, int n) {
    alignas(16) float lanes[kWidth];
    vst1q_f32(lanes, r);
    std::memcpy(p, lanes, static_cast<size_t>(n) * sizeof(float));
  }
};

}  // namespace
}  // namespace staticlm::cpu::simd
