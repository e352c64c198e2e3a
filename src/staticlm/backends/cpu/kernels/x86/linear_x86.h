// SPDX-License-Identifier: Apache-2.0
// The x86 linear entry points (linear_columns.h's LinearColumnsFn, one per instruction set, each
// defined in a file compiled for that set alone), the shapes of their micro-kernels that the
// registry's entries carry (register_x86.cpp), and the x86 quantizers of x (quantized_rows.h).
// Declarations only: safe to include before a target pragma, and anywhere on x86.
#pragma once

#include <cstdint>

#include "staticlm/backends/cpu/kernels/linear_columns.h"

namespace staticlm::cpu {

// Rows of the AVX-512 and AVX2 float GEMM micro-kernels' blocks (simd::Avx512 / simd::Avx2
// kPanelRows, checked where they are compiled), which a slice of a call's rows keeps whole.
inline constexpr int64_t kAvxFloatBlockRows = 6;
// Rows from which the bf16 entry multiplies bf16 pairs (below, rounding x costs more than the
// faster products win).
inline constexpr int64_t kPackedMinRows = 32;
// Rows from which the AMX entry multiplies bf16 tiles: every chunk of more than one row. A short
// prompt streams the weights from memory either way, and the tiles leave the cores free to keep
// up with the stream where the widened GEMM could not (`staticlm bench -p 8` on a bf16 program);
// a single row is decode's, on the GEMV.
inline constexpr int64_t kTileMinRows = 2;
// Rows of the blocks the pair GEMM (8 rows of accumulators) and the tile GEMM (a tile's 16 rows)
// run.
inline constexpr int64_t kPackedBlockRows = 8;
inline constexpr int64_t kTileBlockRows = 16;

void linear_columns_avx512(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);
void linear_columns_avx2(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);

// AVX-512 BF16 (vdpbf16ps), for bf16 weights and an even K: with x_bf16 set (the kernels round x
// for calls of at least kPackedMinRows rows), a GEMM over the panels' bf16 pairs as stored (32
// multiply-adds an instruction, twice an f32 FMA's, at a rate that differs by CPU: cpu_runtime.cpp
// probes it; x is rounded to bf16, as llama.cpp's bf16 path does); otherwise
// linear_columns_avx512.
// round_to_bf16_avx512bf16 rounds x (to nearest even) for it.
void linear_columns_avx512_bf16(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);
// AMX tiles (tdpbf16ps), for the calls linear_columns_avx512_bf16 takes (x_bf16 set, bf16
// weights, an even K; x is rounded from kTileMinRows rows): blocks of 32 rows of x against
// 32-column panels read in place as tiles,
// 8192 multiply-adds per instruction; otherwise linear_columns_avx512. Needs the process's AMX
// grant (CpuFeature::kAmxBf16).
void linear_columns_amx_bf16(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);

// int8 / int4 panels (x_quantized set): vpdpbusd (AVX-512 VNNI), or the same integer products
// with vpmaddwd (AVX2); both give identical results. `scratch` holds an int4 group unpacked.
void linear_columns_q_avx512vnni(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);
// Rows from which the AMX int8 entry multiplies int8 weights on tiles (int4: from 33, below
// which the VNNI kernel streams the packed panels). Up to 4 rows, one VNNI block of rows,
// streaming is faster; from 6 rows the tiles are (SmolLM's int8 time to first token,
// `staticlm bench -p 2` to `-p 8`).
inline constexpr int64_t kQuantTileMinRows = 5;
// AMX tiles (tdpbsud) for the calls above: blocks of 16 rows of x's codes against 32-column
// panels read in place as tiles (int4 unpacked per span), bit for bit what
// linear_columns_q_avx512vnni computes; otherwise that function. Needs the process's AMX grant
// (CpuFeature::kAmxInt8).
void linear_columns_q_amx(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);
void linear_columns_q_avx2(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);
// The same with AVX-VNNI's 256-bit vpdpbusd (CpuFeature::kAvxVnni): the same results.
void linear_columns_q_avx_vnni(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);
void round_to_bf16_avx512bf16(const float* x, int64_t count, uint16_t* out);

// quantized_rows.h's QuantizeGroupFn, 16 values a step with AVX-512 or 8 with AVX2 (the same
// multiply, round to nearest even and clamp as the scalar loop, so the same codes).
void quantize_group_avx512(const float* x, int64_t count, int8_t* codes, float& scale, int32_t& sum);
void quantize_group_avx2(const float* x, int64_t count, int8_t* codes, float& scale, int32_t& sum);

}  // namespace staticlm::cpu
