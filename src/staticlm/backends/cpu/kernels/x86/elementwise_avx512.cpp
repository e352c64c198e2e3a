// SPDX-License-Identifier: Apache-2.0
// The cpu backend's elementwise loops for AVX-512.
// g++ 12 warns that the undefined-vector placeholders inside some AVX-512 intrinsics
// (_mm512_cvtph_ps, _mm512_reduce_add_ps) are uninitialised: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "staticlm/backends/cpu/kernels/x86/elementwise_x86.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")

#include "staticlm/backends/cpu/kernels/elementwise_impl.h"
#include "staticlm/backends/cpu/kernels/x86/simd_avx512.h"

namespace staticlm::cpu {

void swiglu_avx512(const float* gate, const float* up, float* out, int64_t count) {
  elementwise::swiglu<simd::Avx512>(gate, up, out, count);
}

void geglu_avx512(const float* gate, const float* up, float* out, int64_t count) {
  elementwise::geglu<simd::Avx512>(gate, up, out, count);
}

float exp_shifted_avx512(float* x, int64_t count, float shift) {
  return elementwise::exp_shifted<simd::Avx512>(x, count, shift);
}

void add_avx512(const float* a, const float* b, float* out, int64_t count) {
  elementwise::add<simd::Avx512>(a, b, out, count);
}

void mul_avx512(const float* a, const float* b, float* out, int64_t count) {
  elementwise::mul<simd::Avx512>(a, b, out, count);
}

void scale_avx512(const float* x, float factor, float* out, int64_t count) {
  elementwise::scale<simd::Avx512>(x, factor, out, count);
}

void softcap_avx512(const float* x, float cap, float* out, int64_t count) {
  elementwise::softcap<simd::Avx512>(x, cap, out, count);
}

void rms_norm_avx512(const float* x, const float* weight, float* out, int64_t width, float eps) {
  elementwise::rms_norm<simd::Avx512>(x, weight, out, width, eps);
}

void rotate_half_avx512(const float* x, const float* cos, const float* sin, float* out, int64_t half) {
  elementwise::rotate_half<simd::Avx512>(x, cos, sin, out, half);
}

}  // namespace staticlm::cpu

#pragma GCC pop_options
