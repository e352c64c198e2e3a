// SPDX-License-Identifier: Apache-2.0
// The cpu backend's linear: out[m, n] = sum_k x[m, k] * w[n, k] + bias[n], with the weight packed
// at export in the panel32 layout (ops/weight_layout.h; the cpu backend's pack_weights pass):
// 32 output columns per panel, stored k-major. The decode GEMV streams each panel front to back
// (the whole matrix is one sequential read, 32 outputs per step, no horizontal sums); the prefill
// GEMM takes a panel's K block as its micro-kernel operand where it lies (f32) or widened once
// per block (f16, bf16), so nothing is repacked per call or at load.
//
// One function per instruction set, each in a file of its architecture's folder compiled for that
// set alone (a target pragma, so nothing else in the binary needs it; x86/linear_x86.h declares
// them); the registry picks one after checking the CPU.
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

// Computes columns [n_begin, n_end) of every row, without the bias (the caller adds it: the ISA
// files touch nothing but registers and memory). n_begin is a multiple of kPanelColumns;
// `scratch` holds at least kLinearScratchFloats floats (widened K blocks), owned by the calling
// thread.
using LinearColumnsFn = void (*)(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);

// The float GEMM walks K in blocks of this many: two panels' f32 block (64 x 128) is 32 KiB, so it
// stays in L1 beside the rows of x while every block of rows runs over it; blocks of 256 (64 KiB)
// would not fit a 48 KiB L1 (linear_bench gemm_*, SmolLM's shapes).
inline constexpr int64_t kPackedInnerBlock = 128;
// Two widened K blocks: the GEMM's micro-kernel may run over two panels at once.
inline constexpr int64_t kLinearScratchFloats = 2 * kPanelColumns * kPackedInnerBlock;

}  // namespace staticlm::cpu
