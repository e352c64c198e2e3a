// SPDX-License-Identifier: Apache-2.0
// The AArch64 elementwise and row loops (elementwise_rows.h's ElementwiseFns and the vector exp)
// for NEON. Declarations only.
#pragma once

#include <cstdint>

#include "staticlm/backends/cpu/kernels/elementwise_rows.h"

namespace staticlm::cpu {

float exp_shifted_neon(float* x, int64_t count, float shift);
void swiglu_neon(const float* gate, const float* up, float* out, int64_t count);
void geglu_neon(const float* gate, const float* up, float* out, int64_t count);
void add_neon(const float* a, const float* b, float* out, int64_t count);
void mul_neon(const float* a, const float* b, float* out, int64_t count);
void scale_neon(const float* x, float factor, float* out, int64_t count);
void softcap_neon(const float* x, float cap, float* out, int64_t count);
void rms_norm_neon(const float* x, const float* weight, float* out, int64_t width, float eps);
void rotate_half_neon(const float* x, const float* cos, const float* sin, float* out, int64_t half);

inline constexpr ElementwiseFns kElementwiseNeon{swiglu_neon, geglu_neon,   add_neon,      mul_neon,
                                                 scale_neon,  softcap_neon, rms_norm_neon, rotate_half_neon};

}  // namespace staticlm::cpu
