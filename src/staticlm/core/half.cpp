// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/half.h"

namespace staticlm {

float f16_to_f32(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t out = 0;
  if (exponent == 0) {
    if (mantissa == 0) {
      out = sign;
    } else {
      // Subnormal half: renormalize into a normal float.
      int shift = 0;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        ++shift;
      }
      mantissa &= 0x3ffu;
      out = sign | (static_cast<uint32_t>(127 - 15 - shift + 1) << 23) | (mantissa << 13);
    }
  } else if (exponent == 0x1fu) {
    out = sign | 0x7f800000u | (mantissa << 13);
  } else {
    out = sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(out);
}

uint16_t f32_to_f16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs_bits = bits & 0x7fffffffu;
  if (abs_bits > 0x7f800000u) {
    return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  }
  if (abs_bits >= 0x477ff000u) {
    return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to infinity
  }
  if (abs_bits < 0x38800000u) {
    // Result is subnormal or zero: add the magic constant so the FPU does the rounding.
    const float magic = std::bit_cast<float>(0x3f000000u);  // 0.5
    float shifted = std::bit_cast<float>(abs_bits) + magic;
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(shifted) - 0x3f000000u));
  }
  uint32_t rounded = abs_bits + 0xc8000fffu + ((abs_bits >> 13) & 1u);
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

}  // namespace staticlm
