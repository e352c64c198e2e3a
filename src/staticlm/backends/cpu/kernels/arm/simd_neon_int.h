// SPDX-License-Identifier: Apache-2.0
// What the AArch64 integer traits linear_quant_tiles.h is written over share (linear_q_neon.cpp,
// linear_q_dotprod.cpp, linear_q_i8mm.cpp): 4 int32 lanes per register, a 16-byte word row of 4
// lanes x 4 k, int4 nibbles as bytes, a word of four x codes in every lane, and a lane's integer
// sum into a float. Each derived traits type adds its dot4, dot4_small and kQuantRows.
//
// The stored int8 bytes are q + 128; flipping their top bit gives q as a signed byte, so the
// products are signed x signed (sdot, smull) and their sums carry no offset (kInt8DotOffset).
// Unpacked int4 codes (0..15) are the same as signed or unsigned bytes and keep their offset 8.
// dot4_small multiplies bytes as the signed codes they are: unpacked int4, or int8 a chunk has
// flipped once for all its rows.
// Include after simd_neon.h (and after the target pragma of a file that has one); its namespace
// is anonymous, as the float traits' is.
#pragma once

#include <arm_neon.h>

#include <cstdint>

#include "staticlm/backends/cpu/kernels/arm/simd_neon.h"

namespace staticlm::cpu::simd {
namespace {

struct NeonIntBase : Neon {
  using IReg = int32x4_t;
  using XWord = int8x16_t;
  static constexpr int32_t kInt8DotOffset = 0;

  static IReg izero() { return vdupq_n_s32(0); }
  static IReg iload(const uint8_t* p) { return vreinterpretq_s32_u8(vld1q_u8(p)); }
  static void istore(uint8_t* p, IReg v) { vst1q_u8(p, vreinterpretq_u8_s32(v)); }
  static IReg low_nibbles(IReg w) { return vreinterpretq_s32_u8(vandq_u8(vreinterpretq_u8_s32(w), vdupq_n_u8(0x0F))); }
  static IReg high_nibbles(IReg w) { return vreinterpretq_s32_u8(vshrq_n_u8(vreinterpretq_u8_s32(w), 4)); }
  static XWord xword(int32_t word) { return vreinterpretq_s8_s32(vdupq_n_s32(word)); }
  // The stored int8 bytes as signed codes q.
  static int8x16_t signed_codes(IReg w) { return veorq_s8(vreinterpretq_s8_s32(w), vdupq_n_s8(-128)); }
  static Reg to_float(IReg acc, int32_t offset_sum) { return vcvtq_f32_s32(vsubq_s32(acc, vdupq_n_s32(offset_sum))); }

  // The AArch64 kernels' integer sums of a group start at kSumBias, the bits of 1.5 * 2^23, rather
  // than at zero: a sum below 2^22 in magnitude (at most 128 x 128 x 127, a group of 128) then
  // reads as the float 1.5 * 2^23 + sum, whose unit in the last place is 1, so one subtraction
  // gives the sum as a float, exactly as scvtf does. In llvm-mca's Neoverse N1 and V1 models scvtf
  // takes two slots of the vector pipes, the subtraction one.
  static constexpr int32_t kSumBias = 0x4B400000;
  static_assert(128 * 128 * 127 < (1 << 22));
  static Reg from_biased(IReg acc) { return vsubq_f32(vreinterpretq_f32_s32(acc), vdupq_n_f32(12582912.0f)); }
};

}  // namespace
}  // namespace staticlm::cpu::simd
