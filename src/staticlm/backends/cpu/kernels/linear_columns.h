// The cpu backend's linear: out[m, n] = sum_k x[m, k] * w[n, k] + bias[n], with the weight in
// Hugging Face's [N, K] row-major layout. That layout already keeps each output's weights
// contiguous along K, which is what both the decode GEMV (one stream per output row) and the
// prefill GEMM (a tile of weight rows reused for every row of the chunk) read; the kernels take
// it as exported: the GEMM packs each 32-column panel of it (widened to f32) per call into a
// small per-thread buffer, BLAS-style, which costs one read of the weights per call and is
// reused by every row of the chunk; nothing is repacked at load.
//
// One function per instruction set, each in a file compiled for that set alone (a target pragma,
// so nothing else in the binary needs it); callers pick one after checking the CPU.
#pragma once

#include <cstdint>

#include "staticlm/core/dtype.h"

namespace staticlm::cpu {

struct LinearOperands {
  const float* x = nullptr;      // [rows, inner]
  const void* weight = nullptr;  // [columns, inner] of weight_dtype: f32, f16 or bf16
  const void* bias = nullptr;    // [columns] of bias_dtype, or null
  float* out = nullptr;          // [rows, columns]
  int64_t rows = 0;              // M
  int64_t inner = 0;             // K
  int64_t columns = 0;           // N
  DType weight_dtype = DType::kF32;
  DType bias_dtype = DType::kF32;
  // The bf16 GEMM's x, rounded to bf16 ([rows, inner]); null where x is used as f32.
  const uint16_t* x_bf16 = nullptr;
};

// Work is split over output columns in whole tiles: 4 columns for the GEMV and the small-row
// tiles, a 32-column panel for the packed GEMM (at least kPackedMinRows rows: below that, packing
// the panel costs more than the tiles lose).
inline constexpr int64_t kLinearColumnsPerItem = 4;
inline constexpr int64_t kPanelColumns = 32;
inline constexpr int64_t kPackedMinRows = 32;

inline int64_t linear_columns_per_item(int64_t rows) {
  return rows >= kPackedMinRows ? kPanelColumns : kLinearColumnsPerItem;
}

// Computes columns [n_begin, n_end) of every row, without the bias (the caller adds it: the ISA
// files touch nothing but registers and memory). n_begin is a multiple of
// linear_columns_per_item(rows); `scratch` holds at least kLinearScratchFloats floats (the packed
// panel), owned by the calling thread.
using LinearColumnsFn = void (*)(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);

// K is packed in blocks of this many (a 32 x 256 f32 panel is 32 KiB: it stays in L1 / L2).
inline constexpr int64_t kPackedInnerBlock = 256;
inline constexpr int64_t kLinearScratchFloats = kPanelColumns * kPackedInnerBlock;

void linear_columns_avx512(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);
void linear_columns_avx2(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);

// AVX-512 BF16 (vdpbf16ps), for bf16 weights and an even K: with x_bf16 set and at least
// kPackedMinRows rows, a packed GEMM over bf16 pairs (twice the f32 rate; x is rounded to bf16,
// as llama.cpp's bf16 path does); otherwise linear_columns_avx512. round_to_bf16_avx512bf16
// rounds x (to nearest even) for it.
void linear_columns_avx512_bf16(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch);
void round_to_bf16_avx512bf16(const float* x, int64_t count, uint16_t* out);

}  // namespace staticlm::cpu
