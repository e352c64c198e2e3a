// SPDX-License-Identifier: Apache-2.0
// The cpu backend's elementwise loops for NEON.
#include "staticlm/backends/cpu/kernels/arm/elementwise_arm.h"
#include "staticlm/backends/cpu/kernels/arm/simd_neon.h"
#include "staticlm/backends/cpu/kernels/elementwise_impl.h"

namespace staticlm::cpu {

void swiglu_neon(const float* gate, const float* up, float* out, int64_t count) {
  elementwise::swiglu<simd::Neon>(gate, up, out, count);
}

void geglu_neon(const float* gate, const float* up, float* out, int64_t count) {
  elementwise::geglu<simd::Neon>(gate, up, out, count);
}

float exp_shifted_neon(float* x, int64_t count, float shift) {
  return elementwise::exp_shifted<simd::Neon>(x, count, shift);
}

void add_neon(const float* a, const float* b, float* out, int64_t count) {
  elementwise::add<simd::Neon>(a, b, out, count);
}

void mul_neon(const float* a, const float* b, float* out, int64_t count) {
  elementwise::mul<simd::Neon>(a, b, out, count);
}

void scale_neon(const float* x, float factor, float* out, int64_t count) {
  elementwise::scale<simd::Neon>(x, factor, out, count);
}

void softcap_neon(const float* x, float cap, float* out, int64_t count) {
  elementwise::softcap<simd::Neon>(x, cap, out, count);
}

void rms_norm_neon(const float* x, const float* weight, float* out, int64_t width, float eps) {
  elementwise::rms_norm<simd::Neon>(x, weight, out, width, eps);
}

void rotate_half_neon(const float* x, const float* cos, const float* sin, float* out, int64_t half) {
  elementwise::rotate_half<simd::Neon>(x, cos, sin, out, half);
}

}  // namespace staticlm::cpu
