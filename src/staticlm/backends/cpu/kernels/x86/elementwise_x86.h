// SPDX-License-Identifier: Apache-2.0
// The x86 elementwise and row loops (elementwise_rows.h's ElementwiseFns and the vector exp, one
// set per instruction set, each defined in a file compiled for that set alone). Declarations
// only: safe to include before a target pragma.
#pragma once

#include <cstdint>

#include "staticlm/backends/cpu/kernels/elementwise_rows.h"

namespace staticlm::cpu {

float exp_shifted_avx512(float* x, int64_t count, float shift);
float exp_shifted_avx2(float* x, int64_t count, float shift);

// Only their addresses are taken before the CPU is known to have the set.
void swiglu_avx512(const float* gate, const float* up, float* out, int64_t count);
void geglu_avx512(const float* gate, const float* up, float* out, int64_t count);
void add_avx512(const float* a, const float* b, float* out, int64_t count);
void mul_avx512(const float* a, const float* b, float* out, int64_t count);
void scale_avx512(const float* x, float factor, float* out, int64_t count);
void softcap_avx512(const float* x, float cap, float* out, int64_t count);
void rms_norm_avx512(const float* x, const float* weight, float* out, int64_t width, float eps);
void rotate_half_avx512(const float* x, const float* cos, const float* sin, float* out, int64_t half);
void swiglu_avx2(const float* gate, const float* up, float* out, int64_t count);
void geglu_avx2(const float* gate, const float* up, float* out, int64_t count);
void add_avx2(const float* a, const float* b, float* out, int64_t count);
void mul_avx2(const float* a, const float* b, float* out, int64_t count);
void scale_avx2(const float* x, float factor, float* out, int64_t count);
void softcap_avx2(const float* x, float cap, float* out, int64_t count);
void rms_norm_avx2(const float* x, const float* weight, float* out, int64_t width, float eps);
void rotate_half_avx2(const float* x, const float* cos, const float* sin, float* out, int64_t half);

// Every loop of one instruction set.
inline constexpr ElementwiseFns kElementwiseAvx512{swiglu_avx512, geglu_avx512,   add_avx512,      mul_avx512,
                                                   scale_avx512,  softcap_avx512, rms_norm_avx512, rotate_half_avx512};
inline constexpr ElementwiseFns kElementwiseAvx2{swiglu_avx2, geglu_avx2,   add_avx2,      mul_avx2,
                                                 scale_avx2,  softcap_avx2, rms_norm_avx2, rotate_half_avx2};

}  // namespace staticlm::cpu
