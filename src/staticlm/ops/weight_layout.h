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
inline constexpr int64_t kPanelWidth = 32;

// A [rows, cols] matrix in the panel32 layout.
struct PanelLayout {
  int64_t rows = 0;   // N
  int64_t cols = 0;   // K
  int64_t group = 1;  // consecutive k values per lane

  // 2 for bf16, 1 for every other dtype.
  static int64_t group_of(DType dtype) { return dtype == DType::kBF16 ? 2 : 1; }
  static PanelLayout of(int64_t rows, int64_t cols, DType dtype) { return {rows, cols, group_of(dtype)}; }

  int64_t panels() const { return (rows + kPanelWidth - 1) / kPanelWidth; }
  int64_t groups() const { return (cols + group - 1) / group; }
  // Elements of one panel, and of the whole stored tensor.
  int64_t panel_elements() const { return groups() * kPanelWidth * group; }
  int64_t elements() const { return panels() * panel_elements(); }
  Shape packed_shape() const { return {panels(), groups(), kPanelWidth * group}; }
  // Where element (r, c) of the logical matrix is stored.
  int64_t index(int64_t r, int64_t c) const {
    return (r / kPanelWidth) * panel_elements() + (c / group) * kPanelWidth * group + (r % kPanelWidth) * group +
           c % group;
  }
};

// The layout of a node's matrix input number `matrix` (0 for linear and embedding, p for
// multi_linear's part p): nullopt for rows; for panel32 the logical shape from `weight_shapes`,
// checked against the stored `spec` (a plain float dtype, the packed shape). InvalidArgument
// naming the attribute otherwise.
Result<std::optional<PanelLayout>> matrix_layout(const Attributes& attrs, int64_t matrix, const TensorSpec& spec);

// The logical [N, K] of a node's matrix input: its shape for rows, `weight_shapes` for panel32.
Result<Shape> logical_matrix_shape(const Attributes& attrs, int64_t matrix, const TensorSpec& spec);

// Packs `rows_data` ([N, K] row-major, elements of `element_bytes`) into `out` (layout.elements()
// elements), zero padding included.
void pack_panels(std::span<const uint8_t> rows_data, size_t element_bytes, const PanelLayout& layout,
                 std::span<uint8_t> out);

}  // namespace staticlm
