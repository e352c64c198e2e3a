// SPDX-License-Identifier: Apache-2.0
// Activations quantized for the integer linear kernels: each row of x cut into groups of the
// weights' group size g, each group its own symmetric int8 scale (dx = max|x| / 127, codes
// round(x / dx) in [-127, 127], ties to even), so an outlier spoils only its own group, never the
// row (a per-token scale flips the argmax on models such as Qwen3). Each group also keeps the sum
// of its codes: the weights are stored with an offset (q + 128, q + 8), and
//   sum_k (q_w + offset) * q_x = sum_k q_w * q_x + offset * sum_k q_x,
// so the kernels take the offset back out with one multiply per group.
//
// Every instruction-set path reads the same codes (computed alike by every quantizer), so their
// integer dot products agree exactly.
#pragma once

#include <cstdint>
#include <vector>

namespace staticlm::cpu {

struct QuantizedRows {
  int64_t rows = 0;
  int64_t groups = 0;  // per row: ceil(K / group)
  int64_t group = 0;   // g, a multiple of 8
  // [rows][groups * group] int8 codes, zero past K; 4-byte aligned (words of four k values).
  std::vector<int32_t> code_words;
  std::vector<float> scales;  // [rows][groups]: dx
  std::vector<int32_t> sums;  // [rows][groups]: the sum of the group's codes

  const int8_t* codes(int64_t row) const {
    return reinterpret_cast<const int8_t*>(code_words.data()) + row * groups * group;
  }
  const int32_t* words(int64_t row) const { return code_words.data() + row * groups * group / 4; }
  const float* row_scales(int64_t row) const { return scales.data() + row * groups; }
  const int32_t* row_sums(int64_t row) const { return sums.data() + row * groups; }
};

// Quantizes one group of `count` values of x into codes, its scale and its code sum. Every
// instruction set's version (quantize_group_scalar here; the architecture folders' vector ones,
// which the registry's entries carry) gives the same codes, scales and sums: the same IEEE
// multiply, round to nearest even and clamp per value. Tests compare them.
using QuantizeGroupFn = void (*)(const float* x, int64_t count, int8_t* codes, float& scale, int32_t& sum);
void quantize_group_scalar(const float* x, int64_t count, int8_t* codes, float& scale, int32_t& sum);

// Quantizes x [rows, inner] (row-major) into `out` in groups of `group` (a multiple of 8),
// reusing its storage, each group with `quantize_group`.
void quantize_rows(const float* x, int64_t rows, int64_t inner, int64_t group, QuantizedRows& out,
                   QuantizeGroupFn quantize_group = quantize_group_scalar);

// The same in two steps, so that threads can share the rows: size `out` for rows of `inner`
// (codes zeroed), then quantize rows [first, last) of x into it; calls for disjoint ranges may
// run at once.
void size_rows(int64_t rows, int64_t inner, int64_t group, QuantizedRows& out);
void quantize_row_range(const float* x, int64_t inner, int64_t first, int64_t last, QuantizedRows& out,
                        QuantizeGroupFn quantize_group = quantize_group_scalar);

}  // namespace staticlm::cpu
