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

void quantize_row_range(const float* x, int64_t inner, int64_t first_row, int64_t last_row, QuantizedRows& out) {
  const int64_t group = out.group;
  const int64_t stride = out.groups * group;
  for (int64_t r = first_row; r < last_row; ++r) {
    const float* row = x + r * inner;
    int8_t* codes = reinterpret_cast<int8_t*>(out.code_words.data()) + r * stride;
    for (int64_t gi = 0; gi < out.groups; ++gi) {
      const int64_t first = gi * group;
      const int64_t count = std::min(group, inner - first);
      float largest = 0.0f;
      bool finite = true;
      for (int64_t k = 0; k < count; ++k) {
        finite = finite && std::isfinite(row[first + k]);
        largest = std::max(largest, std::fabs(row[first + k]));
      }
      // A NaN or infinity has no code: its group gets zero codes and a NaN scale, so the outputs
      // it feeds are NaN, as the float kernels would make them.
      const float inverse = finite && largest > 0.0f ? 127.0f / largest : 0.0f;
      int32_t sum = 0;
      for (int64_t k = 0; k < count && inverse > 0.0f; ++k) {
        // |x * inverse| <= 127 up to rounding; the clamp keeps a rounding past it in range.
        const auto q = static_cast<int32_t>(std::clamp(std::nearbyint(row[first + k] * inverse), -127.0f, 127.0f));
        codes[first + k] = static_cast<int8_t>(q);
        sum += q;
      }
      out.scales[static_cast<size_t>(r * out.groups + gi)] = finite ? largest / 127.0f : std::nanf("");
      out.sums[static_cast<size_t>(r * out.groups + gi)] = sum;
    }
  }
}

void quantize_rows(const float* x, int64_t rows, int64_t inner, int64_t group, QuantizedRows& out) {
  size_rows(rows, inner, group, out);
  quantize_row_range(x, inner, 0, rows, out);
}

}  // namespace staticlm::cpu
