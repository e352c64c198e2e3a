// SPDX-License-Identifier: Apache-2.0
// The sdot traits (Armv8.2 dotprod) of linear_quant_tiles.h: sdot sums four signed byte products
// into each 32-bit lane, and a chunk step takes two rows (16 integer accumulators beside a
// panel's 8 weight registers and the two rows' x words). linear_q_dotprod.cpp runs them, and
// linear_q_i8mm.cpp for decode, short calls and an odd last row (an i8mm CPU has dotprod).
// Include after simd_neon_int.h, in a file whose target pragma has dotprod; its namespace is
// anonymous, as the other traits' are, so each file keeps the copy compiled for its target.
#pragma once

#include <arm_neon.h>

#include "staticlm/backends/cpu/kernels/arm/simd_neon_int.h"

namespace staticlm::cpu::simd {
namespace {

struct NeonDot : NeonIntBase {
  static constexpr int kQuantRows = 2;

  static IReg dot4(IReg acc, IReg w, XWord x) { return vdotq_s32(acc, signed_codes(w), x); }
  static IReg dot4_small(IReg acc, IReg w, XWord x) { return vdotq_s32(acc, vreinterpretq_s8_s32(w), x); }
};

}  // namespace
}  // namespace staticlm::cpu::simd
