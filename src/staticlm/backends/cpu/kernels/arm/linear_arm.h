// SPDX-License-Identifier: Apache-2.0
// The AArch64 linear entry points (linear_columns.h's LinearColumnsFn, one per instruction set;
// the dotprod, i8mm and bf16 ones each in a file compiled for that extension alone), the shapes of
// their micro-kernels that the registry's entries carry (register_arm.cpp), and the NEON
// quantizer of x (quantized_rows.h). Declarations only: safe to include anywhere on AArch64.
#pragma once

#include <cstdint>

#include "staticlm/backends/cpu/kernels/linear_columns.h"

namespace staticlm::cpu {

// Rows of the NEON float GEMM micro-kernel's blocks (simd::Neon::kPanelRows, checked where it is
// compiled), which a slice of a call's rows keeps whole.
inline constexpr int64_t kNeonFloatBlockRows = 5;

// f32 / f16 / bf16 panels with FMLA in f32: f16 widened by fcvtl, bf16 by a shift.
void linear_columns_neon(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);

// Rows of the bf16 GEMM's blocks (bfmmla: two pairs of rows by half a panel), which a slice of a
// call's rows keeps whole.
inline constexpr int64_t kNeonBf16BlockRows = 4;

// bf16 panels with an even K and x rounded to bf16 (x_bf16 set: the bf16 entry rounds every
// call, by round_to_bf16_neon), with the bf16 extension (CpuFeature::kNeonBf16): decode by bfdot,
// chunks by bfmmla, products summed in f32; otherwise linear_columns_neon. `scratch` holds a
// K block of a panel zipped for bfmmla.
void linear_columns_bf16(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);
// x to bf16, to nearest even (bfcvtn, as x86's vcvtneps2bf16), for linear_columns_bf16.
void round_to_bf16_neon(const float* x, int64_t count, uint16_t* out);

// int8 / int4 panels (x_quantized set), all with the same integer sums and so the same results:
// widening multiplies and pairwise adds (smull, sadalp) on any AArch64 CPU, sdot (dotprod:
// CpuFeature::kNeonDotProd), smmla (i8mm: CpuFeature::kNeonI8mm, with dotprod for decode and an
// odd row). `scratch` holds a span unpacked (int4) or interleaved (smmla's chunks).
void linear_columns_q_neon(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);
void linear_columns_q_dotprod(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);
void linear_columns_q_i8mm(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);

// quantized_rows.h's QuantizeGroupFn, 4 values a step (the same multiply, round to nearest even
// and clamp as the scalar loop, so the same codes).
void quantize_group_neon(const float* x, int64_t count, int8_t* codes, float& scale, int32_t& sum);

}  // namespace staticlm::cpu
