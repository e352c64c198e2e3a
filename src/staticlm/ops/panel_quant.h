// SPDX-License-Identifier: Apache-2.0
// Symmetric per-group quantization of matrices into the panel32_q8 / panel32_q4 layouts
// (ops/weight_layout.h, docs/ops.md "Quantized panels"), and the way back: the exporter
// quantizes with quantize_panels while the program is written; the portable kernels (the
// oracle of every quantized kernel) read a row back with dequantize_panel_row.
//
// Per lane (one output row) and group of g consecutive k values, one f16 scale d:
//   int8: d = max|x| / 127, q = round(x / d) in [-127, 127], stored as the byte q + 128;
//   int4: d = -m / 8 where m is the value of largest magnitude (q4_0's rule: m itself maps to
//         -8, the one extra negative code), q = round(x / d) in [-8, 7], stored as the nibble
//         q + 8.
// q is computed against d rounded to f16, the scale the kernels multiply by. Padding (k past K,
// lanes past N) holds q = 0; a padding lane's scale is 0.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "staticlm/core/status.h"
#include "staticlm/ops/weight_layout.h"

namespace staticlm {

// The integer code offset the stored codes carry: 128 for int8, 8 for int4.
constexpr int32_t code_offset(PanelCodes codes) {
  return codes == PanelCodes::kInt4 ? 8 : 128;
}

// Byte of one group's code area holding k value `k` (0 <= k < group) of lane `lane`: four
// consecutive k values of one lane share a 32-bit word. int4 packs two words' worth into one: the
// byte of k = 8j + b (b < 4) holds it in its low nibble and k + 4 in its high nibble.
inline int64_t code_byte(PanelCodes codes, int64_t lane, int64_t k) {
  const int64_t per_word = codes == PanelCodes::kInt4 ? 8 : 4;
  return (k / per_word) * kPanelWidth * 4 + lane * 4 + k % 4;
}
inline bool code_in_high_nibble(int64_t k) {
  return k % 8 >= 4;
}

// Quantizes the row-major f32 [layout.rows, layout.cols] matrix `rows` into `out`
// (layout.elements() bytes of a quantized layout). InvalidArgument naming `name` and the element
// when a value is not finite or its group's scale overflows f16.
Status quantize_panels(std::span<const float> rows, const PanelLayout& layout, std::span<uint8_t> out,
                       std::string_view name);

// Logical row `row` of the quantized matrix at `data`, dequantized (d * q) into out[0, cols).
void dequantize_panel_row(const uint8_t* data, const PanelLayout& layout, int64_t row, float* out);

}  // namespace staticlm
