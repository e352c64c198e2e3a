// The cpu backend's linear: out[m, n] = sum_k x[m, k] * w[n, k] + bias[n], with the weight in
// Hugging Face's [N, K] row-major layout. That layout already keeps each output's weights
// contiguous along K, which is what both the decode GEMV (one stream per output row) and the
// prefill GEMM (a tile of weight rows reused for every row of the chunk) read; the kernels take
// it as exported, without a repack.
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
};

// How many output columns one work item covers: the tiles below are this wide, so a thread's
// range of items maps to whole tiles.
inline constexpr int64_t kLinearColumnsPerItem = 4;

// Computes columns [item_begin * 4, min(item_end * 4, columns)) of every row, without the bias
// (the caller adds it: the ISA files touch nothing but registers and memory).
using LinearColumnsFn = void (*)(const LinearOperands& operands, int64_t item_begin, int64_t item_end);

void linear_columns_avx512(const LinearOperands& operands, int64_t item_begin, int64_t item_end);
void linear_columns_avx2(const LinearOperands& operands, int64_t item_begin, int64_t item_end);

}  // namespace staticlm::cpu
