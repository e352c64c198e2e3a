// The cpu backend's linear: out[m, n] = sum_k x[m, k] * w[n, k] + bias[n], with the weight packed
// at export in the panel32 layout (ops/weight_layout.h; the cpu backend's pack_weights pass):
// 32 output columns per panel, stored k-major. The decode GEMV streams each panel front to back
// (the whole matrix is one sequential read, 32 outputs per step, no horizontal sums); the prefill
// GEMM takes a panel's K block as its micro-kernel operand where it lies (f32) or widened once
// per block (f16, bf16), so nothing is repacked per call or at load.
//
// One function per instruction set, each in a file compiled for that set alone (a target pragma,
// so nothing else in the binary needs it); callers pick one after checking the CPU.
#pragma once

#include <cstdint>

#include "staticlm/core/dtype.h"
#include "staticlm/ops/panel_quant.h"  // code_offset, here so every ISA file has it before its pragma
#include "staticlm/ops/weight_layout.h"

namespace staticlm::cpu {

struct QuantizedRows;

struct LinearOperands {
  const float* x = nullptr;      // [rows, inner]
  const void* weight = nullptr;  // panel32 of weight_dtype (f32, f16 or bf16): a logical [columns, inner]
  const void* bias = nullptr;    // [columns] of bias_dtype, or null
  float* out = nullptr;          // [rows, columns]
  int64_t rows = 0;              // M
  int64_t inner = 0;             // K
  int64_t columns = 0;           // N
  int64_t panel_elements = 0;    // weight elements per panel of 32 columns, padding included
  DType weight_dtype = DType::kF32;
  DType bias_dtype = DType::kF32;
  // The bf16 GEMM's x, rounded to bf16 ([rows, inner]); null where x is used as f32.
  const uint16_t* x_bf16 = nullptr;
  // Quantized weights (weight_dtype u8, panel32_q8 / panel32_q4; panel_elements counts bytes):
  // their codes and group size, and x quantized in groups of that size (quantized_rows.h).
  PanelCodes codes = PanelCodes::kFloat;
  int64_t group = 0;
  const QuantizedRows* x_quantized = nullptr;
};

// Work is split over output columns in whole panels.
inline constexpr int64_t kPanelColumns = 32;
// Rows from which the bf16 entry multiplies bf16 pairs (below, rounding x costs more than the
// faster products win).
inline constexpr int64_t kPackedMinRows = 32;
// Rows from which the AMX entry multiplies bf16 tiles: every chunk of more than one row. A short
// prompt streams the weights from memory either way, and the tiles leave the cores free to keep
// up with the stream where the widened GEMM could not (an 8-token bf16 prompt 1.7x faster on an
// Intel Xeon); a single row is decode's, on the GEMV.
inline constexpr int64_t kTileMinRows = 2;
// Rows of the blocks the pair GEMM (8 rows of accumulators) and the tile GEMM (a tile's 16 rows)
// run.
inline constexpr int64_t kPackedBlockRows = 8;
inline constexpr int64_t kTileBlockRows = 16;

// Computes columns [n_begin, n_end) of every row, without the bias (the caller adds it: the ISA
// files touch nothing but registers and memory). n_begin is a multiple of kPanelColumns;
// `scratch` holds at least kLinearScratchFloats floats (widened K blocks), owned by the calling
// thread.
using LinearColumnsFn = void (*)(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);

// The float GEMM walks K in blocks of this many: two panels' f32 block (64 x 128) is 32 KiB, so it
// stays in L1 beside the rows of x while every block of rows runs over it. Blocks of 256 (64
// KiB, past a 48 KiB L1) ran the SmolLM shape's GEMM 7% slower in linear_bench and its f32 / bf16
// prefill 2-3% slower; the 1B shape measured level (docs/performance.md).
inline constexpr int64_t kPackedInnerBlock = 128;
// Two widened K blocks: the GEMM's micro-kernel may run over two panels at once.
inline constexpr int64_t kLinearScratchFloats = 2 * kPanelColumns * kPackedInnerBlock;

void linear_columns_avx512(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);
void linear_columns_avx2(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);

// AVX-512 BF16 (vdpbf16ps), for bf16 weights and an even K: with x_bf16 set (the kernels round x
// for calls of at least kPackedMinRows rows), a GEMM over the panels' bf16 pairs as stored (twice
// the f32 rate on Zen 4; x is rounded to bf16, as llama.cpp's bf16 path does); otherwise
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
// streaming was faster: SmolLM int8 time to first token, 2 / 4 / 6 / 8-token prompts, tiles
// against VNNI, 9.7 / 10.9 / 10.7 / 11.5 against 8.8 / 10.0 / 13.0 / 14.4 ms.
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

}  // namespace staticlm::cpu
