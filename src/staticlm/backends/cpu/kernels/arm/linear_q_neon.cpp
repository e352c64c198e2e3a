// SPDX-License-Identifier: Apache-2.0
// The int8 / int4 linear panels for plain NEON (Armv8.0: Cortex-A53 / A55 class cores without
// dotprod): each word row's 16 signed codes times x's word by two widening multiplies (smull,
// smull2: 16-bit products of at most 127 x 127), the adjacent products of a lane added in pairs
// (addp: at most 2 x 16129, still 16 bits), then accumulated into the lane's int32 by a pairwise
// add (sadalp). Exact integer sums, so the results equal the sdot kernel's. Chunks take one row
// per step: the products need temporaries beside the 8 integer and 8 float accumulators and the
// 8 weight registers of a panel.
#include "staticlm/backends/cpu/kernels/arm/linear_arm.h"
#include "staticlm/backends/cpu/kernels/arm/simd_neon.h"
#include "staticlm/backends/cpu/kernels/arm/simd_neon_int.h"
#include "staticlm/backends/cpu/kernels/linear_quant_tiles.h"

namespace staticlm::cpu {
namespace {

struct NeonInt : simd::NeonIntBase {
  static constexpr int kQuantRows = 1;

  // acc lane i += the four products of word i of w (signed bytes) and x.
  static IReg dot_signed(IReg acc, int8x16_t w, XWord x) {
    const int16x8_t low = vmull_s8(vget_low_s8(w), vget_low_s8(x));  // lanes 0 and 1, four products each
    const int16x8_t high = vmull_high_s8(w, x);                      // lanes 2 and 3
    return vpadalq_s16(acc, vpaddq_s16(low, high));
  }
  static IReg dot4(IReg acc, IReg w, XWord x) { return dot_signed(acc, signed_codes(w), x); }
  static IReg dot4_small(IReg acc, IReg w, XWord x) { return dot_signed(acc, vreinterpretq_s8_s32(w), x); }
};

}  // namespace

void linear_columns_q_neon(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch) {
  qtiles::quantized_columns<NeonInt>(operands, n_begin, n_end, scratch);
}

}  // namespace staticlm::cpu
