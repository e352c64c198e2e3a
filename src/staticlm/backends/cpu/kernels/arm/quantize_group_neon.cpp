// SPDX-License-Identifier: Apache-2.0
// The NEON quantizer of x for the integer linear kernels (quantized_rows.h's QuantizeGroupFn):
// 8 values a step, with the scalar loop's multiply, round to nearest even (frintn) and clamp, so
// the same codes, scale and sum; the last count % 8 values one at a time.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>

#include "staticlm/backends/cpu/kernels/arm/linear_arm.h"
#include "staticlm/backends/cpu/kernels/quantized_rows.h"

namespace staticlm::cpu {
namespace {

// The scalar loop's code of v at scale 1 / inverse.
int32_t code_of(float v, float inverse) {
  return static_cast<int32_t>(std::clamp(std::nearbyint(v * inverse), -127.0f, 127.0f));
}

int32x4_t codes_of(float32x4_t v, float32x4_t inverse) {
  const float32x4_t q = vrndnq_f32(vmulq_f32(v, inverse));
  return vcvtq_s32_f32(vminq_f32(vmaxq_f32(q, vdupq_n_f32(-127.0f)), vdupq_n_f32(127.0f)));
}

}  // namespace

void quantize_group_neon(const float* x, int64_t count, int8_t* codes, float& scale, int32_t& sum) {
  const float32x4_t infinity = vdupq_n_f32(INFINITY);
  float32x4_t largest = vdupq_n_f32(0.0f);
  uint32x4_t finite_lanes = vdupq_n_u32(~0u);
  const int64_t whole = count / 8 * 8;
  for (int64_t k = 0; k < whole; k += 4) {
    const float32x4_t magnitude = vabsq_f32(vld1q_f32(x + k));
    finite_lanes = vandq_u32(finite_lanes, vcltq_f32(magnitude, infinity));  // false for NaN and infinity
    largest = vmaxq_f32(largest, magnitude);
  }
  bool finite = vminvq_u32(finite_lanes) != 0;
  float top = finite ? vmaxvq_f32(largest) : 0.0f;
  for (int64_t k = whole; k < count; ++k) {
    finite = finite && std::isfinite(x[k]);
    top = std::max(top, std::fabs(x[k]));
  }
  const float inverse = finite && top > 0.0f ? 127.0f / top : 0.0f;
  sum = 0;
  if (inverse > 0.0f) {
    const float32x4_t inverse_v = vdupq_n_f32(inverse);
    int32x4_t total = vdupq_n_s32(0);
    for (int64_t k = 0; k < whole; k += 8) {
      const int32x4_t low = codes_of(vld1q_f32(x + k), inverse_v);
      const int32x4_t high = codes_of(vld1q_f32(x + k + 4), inverse_v);
      vst1_s8(codes + k, vmovn_s16(vcombine_s16(vmovn_s32(low), vmovn_s32(high))));
      total = vaddq_s32(total, vaddq_s32(low, high));
    }
    sum = vaddvq_s32(total);
    for (int64_t k = whole; k < count; ++k) {
      const int32_t q = code_of(x[k], inverse);
      codes[k] = static_cast<int8_t>(q);
      sum += q;
    }
  }
  scale = finite ? top / 127.0f : std::nanf("");
}

}  // namespace staticlm::cpu
