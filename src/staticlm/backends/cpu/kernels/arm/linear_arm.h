// SPDX-License-Identifier: Apache-2.0
// The AArch64 linear entry points (linear_columns.h's LinearColumnsFn) and the shapes of their
// micro-kernels that the registry's entries carry (register_arm.cpp). Declarations only: safe to
// include anywhere on AArch64.
#pragma once

#include <cstdint>

#include "staticlm/backends/cpu/kernels/linear_columns.h"

namespace staticlm::cpu {

// Rows of the NEON float GEMM micro-kernel's blocks (simd::Neon::kPanelRows, checked where it is
// compiled), which a slice of a call's rows keeps whole.
inline constexpr int64_t kNeonFloatBlockRows = 5;

// f32 / f16 / bf16 panels with FMLA in f32: f16 widened by fcvtl, bf16 by a shift.
void linear_columns_neon(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);

}  // namespace staticlm::cpu
