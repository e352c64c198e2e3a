// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/cpu/kernels/quantized_rows.h"

#include <algorithm>
#include <cmath>

namespace staticlm::cpu {

void size_rows(int64_t rows, int64_t inner, int64_t group, QuantizedRows& out) {
  out.rows = rows;
  out.group = group;
  out.groups = (inner + group - 1) / group;
  const int64_t stride = out.groups * group;  // codes per row
  out.code_words.assign(static_cast<size_t>(rows * stride / 4), 0);
  out.scales.resize(static_cast<size_t>(rows * out.groups));
  out.sums.resize(static_cast<size_t>(rows * out.groups));
}

namespace {

// The code of v at scale 1 / inverse: |v * inverse| <= 127 up to rounding, and the clamp keeps a
// rounding past it in range.
int32_t code_of(float v, float inverse) {
  return static_cast<int32_t>(std::clamp(std::nearbyint(v * inverse), -127.0f, 127.0f));
}

}  // namespace

void quantize_group_scalar(const float* x, int64_t count, int8_t* codes, float& scale, int32_t& sum) {
  float largest = 0.0f;
  bool finite = true;
  for (int64_t k = 0; k < count; ++k) {
    finite = finite && std::isfinite(x[k]);
    largest = std::max(largest, std::fabs(x[k]));
  }
  // A NaN or infinity has no code: its group gets zero codes and a NaN scale, so the outputs it
  // feeds are NaN, as the float kernels would make them.
  const float inverse = finite && largest > 0.0f ? 127.0f / largest : 0.0f;
  sum = 0;
  for (int64_t k = 0; k < count && inverse > 0.0f; ++k) {
    const int32_t q = code_of(x[k], inverse);
    codes[k] = static_cast<int8_t>(q);
    sum += q;
  }
  scale = finite ? largest / 127.0f : std::nanf("");
}

void quantize_row_range(const float* x, int64_t inner, int64_t first_row, int64_t last_row, QuantizedRows& out,
                        QuantizeGroupFn quantize_group) {
  const int64_t group = out.group;
  const int64_t stride = out.groups * group;
  for (int64_t r = first_row; r < last_row; ++r) {
    int8_t* codes = reinterpret_cast<int8_t*>(out.code_words.data()) + r * stride;
    for (int64_t gi = 0; gi < out.groups; ++gi) {
      const int64_t first = gi * group;
      const size_t at = static_cast<size_t>(r * out.groups + gi);
      quantize_group(x + r * inner + first, std::min(group, inner - first), codes + first, out.scales[at],
                     out.sums[at]);
    }
  }
}

void quantize_rows(const float* x, int64_t rows, int64_t inner, int64_t group, QuantizedRows& out,
                   QuantizeGroupFn quantize_group) {
  size_rows(rows, inner, group, out);
  quantize_row_range(x, inner, 0, rows, out, quantize_group);
}

}  // namespace staticlm::cpu
