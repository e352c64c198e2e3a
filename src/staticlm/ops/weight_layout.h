// SPDX-License-Identifier: Apache-2.0
// How a matrix input (a linear's weight, an embedding's table) is laid out in memory. Two
// layouts, chosen by the node's `weight_layout` attribute (docs/ops.md):
//   rows    (the default) the Hugging Face layout: [N, K] row-major.
//   panel32 what a SIMD kernel streams: the N rows cut into panels of 32 (the last one padded
//           with zero rows), each panel stored k-major as 32 lanes of `group` consecutive k
//           values, so one 64- or 128-byte line holds the same k step of 32 outputs. `group` is
//           how many k values the dot instruction consumes per 32-bit lane: 2 for bf16 (a
//           vdpbf16ps pair), 1 for f32 and f16 (f32 arithmetic). The stored tensor has the
//           packed shape [ceil(N / 32), ceil(K / group), 32 * group], k padded with zeros; the
//           logical [N, K] of each matrix is the node's `weight_shapes` attribute (two values
//           per matrix input, in input order).
//   panel32_q8, panel32_q4
//           the same panels with int8 / int4 codes: per panel, per group of `weight_group` k
//           values, the 32 lanes' f16 scales and then their codes, four consecutive k values of
//           one lane in one 32-bit word (what vpdpbusd consumes). Stored as u8
//           [ceil(N / 32), ceil(K / g), 64 + 32 * g * bits / 8]; docs/ops.md has the byte layout.
// One layout serves the decode GEMV (a panel is one contiguous stream) and the prefill GEMM (a
// panel is the micro-kernel's operand as stored: nothing is repacked per call or at load).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "staticlm/core/result.h"
#include "staticlm/core/tensor.h"
#include "staticlm/ops/attributes.h"

namespace staticlm {

inline constexpr std::string_view kWeightLayoutAttr = "weight_layout";
inline constexpr std::string_view kWeightShapesAttr = "weight_shapes";
inline constexpr std::string_view kRowsLayout = "rows";
inline constexpr std::string_view kPanel32Layout = "panel32";
inline constexpr std::string_view kPanel32Q8Layout = "panel32_q8";
inline constexpr std::string_view kPanel32Q4Layout = "panel32_q4";
inline constexpr std::string_view kWeightGroupAttr = "weight_group";
inline constexpr int64_t kPanelWidth = 32;
// Bytes of one quantized group's scales: 32 f16, one per lane.
inline constexpr int64_t kPanelScaleBytes = kPanelWidth * 2;

// What a panel's lanes hold: float elements of the tensor's dtype, or int8 / int4 codes.
enum class PanelCodes : uint8_t { kFloat, kInt8, kInt4 };

// Whether `group` is a quantization group size the layouts take: 16, 32, 64 or 128.
inline bool is_quant_group(int64_t group) {
  return group == 16 || group == 32 || group == 64 || group == 128;
}

// A [rows, cols] matrix in a panel32 layout.
struct PanelLayout {
  int64_t rows = 0;   // N
  int64_t cols = 0;   // K
  int64_t group = 1;  // float: consecutive k values per lane; quantized: k values per scale
  PanelCodes codes = PanelCodes::kFloat;

  // 2 for bf16, 1 for every other dtype.
  static int64_t group_of(DType dtype) { return dtype == DType::kBF16 ? 2 : 1; }
  static PanelLayout of(int64_t rows, int64_t cols, DType dtype) {
    return {rows, cols, group_of(dtype), PanelCodes::kFloat};
  }
  // `group` must satisfy is_quant_group.
  static PanelLayout quantized(int64_t rows, int64_t cols, PanelCodes codes, int64_t group) {
    return {rows, cols, group, codes};
  }

  bool is_quantized() const { return codes != PanelCodes::kFloat; }
  int64_t panels() const { return (rows + kPanelWidth - 1) / kPanelWidth; }
  int64_t groups() const { return (cols + group - 1) / group; }
  // What one k group of one panel stores: elements for float, bytes (scales, then codes) when
  // quantized.
  int64_t group_units() const {
    switch (codes) {
      case PanelCodes::kInt8: return kPanelScaleBytes + kPanelWidth * group;
      case PanelCodes::kInt4: return kPanelScaleBytes + kPanelWidth * group / 2;
      default: return kPanelWidth * group;
    }
  }
  // Elements (bytes when quantized) of one panel, and of the whole stored tensor.
  int64_t panel_elements() const { return groups() * group_units(); }
  int64_t elements() const { return panels() * panel_elements(); }
  Shape packed_shape() const { return {panels(), groups(), group_units()}; }
  // Where element (r, c) of a float layout's logical matrix is stored.
  int64_t index(int64_t r, int64_t c) const {
    return (r / kPanelWidth) * panel_elements() + (c / group) * kPanelWidth * group + (r % kPanelWidth) * group +
           c % group;
  }
};

// The layout of a node's matrix input number `matrix` (0 for linear and embedding, p for
// multi_linear's part p): nullopt for rows; for a panel32 layout the logical shape from
// `weight_shapes` (and the group from `weight_group` when quantized), checked against the stored
// `spec` (a plain float dtype, or u8 when quantized; the packed shape). InvalidArgument naming
// the attribute otherwise.
Result<std::optional<PanelLayout>> matrix_layout(const Attributes& attrs, int64_t matrix, const TensorSpec& spec);

// The logical [N, K] of a node's matrix input: its shape for rows, `weight_shapes` for panel32.
Result<Shape> logical_matrix_shape(const Attributes& attrs, int64_t matrix, const TensorSpec& spec);

// The layout name of `codes` (panel32, panel32_q8, panel32_q4).
std::string_view panel_layout_name(PanelCodes codes);

// Packs `rows_data` ([N, K] row-major, elements of `element_bytes`) into `out` (layout.elements()
// elements of a float layout), zero padding included.
void pack_panels(std::span<const uint8_t> rows_data, size_t element_bytes, const PanelLayout& layout,
                 std::span<uint8_t> out);

}  // namespace staticlm
