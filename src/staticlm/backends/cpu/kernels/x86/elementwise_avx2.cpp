// SPDX-License-Identifier: Apache-2.0
// The cpu backend's elementwise loops for AVX2 with FMA and F16C.
#include <immintrin.h>

#include "staticlm/backends/cpu/kernels/x86/elementwise_x86.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

#include "staticlm/backends/cpu/kernels/elementwise_impl.h"
#include "staticlm/backends/cpu/kernels/x86/simd_avx2.h"

namespace staticlm::cpu {

void swiglu_avx2(const float* gate, const float* up, float* out, int64_t count) {
  elementwise::swiglu<simd::Avx2>(gate, up, out, count);
}

void geglu_avx2(const float* gate, const float* up, float* out, int64_t count) {
  elementwise::geglu<simd::Avx2>(gate, up, out, count);
}

float exp_shifted_avx2(float* x, int64_t count, float shift) {
  return elementwise::exp_shifted<simd::Avx2>(x, count, shift);
}

void add_avx2(const float* a, const float* b, float* out, int64_t count) {
  elementwise::add<simd::Avx2>(a, b, out, count);
}

void mul_avx2(const float* a, const float* b, float* out, int64_t count) {
  elementwise::mul<simd::Avx2>(a, b, out, count);
}

void scale_avx2(const float* x, float factor, float* out, int64_t count) {
  elementwise::scale<simd::Avx2>(x, factor, out, count);
}

void softcap_avx2(const float* x, float cap, float* out, int64_t count) {
  elementwise::softcap<simd::Avx2>(x, cap, out, count);
}

void rms_norm_avx2(const float* x, const float* weight, float* out, int64_t width, float eps) {
  elementwise::rms_norm<simd::Avx2>(x, weight, out, width, eps);
}

void rotate_half_avx2(const float* x, const float* cos, const float* sin, float* out, int64_t half) {
  elementwise::rotate_half<simd::Avx2>(x, cos, sin, out, half);
}

}  // namespace staticlm::cpu

#pragma GCC pop_options
