// SPDX-License-Identifier: Apache-2.0
#include "staticlm/ops/weight_layout.h"

#include <cstring>
#include <string>
#include <vector>

namespace staticlm {
namespace {

bool is_packable_dtype(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

template <class Elem>
void pack_typed(const Elem* in, const PanelLayout& layout, Elem* out) {
  const int64_t lane_stride = kPanelWidth * layout.group;
  for (int64_t p = 0; p < layout.panels(); ++p) {
    Elem* panel = out + p * layout.panel_elements();
    for (int64_t lane = 0; lane < kPanelWidth; ++lane) {
      const int64_t r = p * kPanelWidth + lane;
      Elem* dst = panel + lane * layout.group;
      if (r >= layout.rows) {
        continue;  // the padding rows stay zero
      }
      const Elem* src = in + r * layout.cols;
      for (int64_t c = 0; c < layout.cols; ++c) {
        dst[(c / layout.group) * lane_stride + c % layout.group] = src[c];
      }
    }
  }
}

}  // namespace

std::string_view panel_layout_name(PanelCodes codes) {
  switch (codes) {
    case PanelCodes::kInt8: return kPanel32Q8Layout;
    case PanelCodes::kInt4: return kPanel32Q4Layout;
    default: return kPanel32Layout;
  }
}

Result<std::optional<PanelLayout>> matrix_layout(const Attributes& attrs, int64_t matrix, const TensorSpec& spec) {
  STATICLM_ASSIGN_OR_RETURN(std::string layout_name, attrs.get_string_or(kWeightLayoutAttr, std::string(kRowsLayout)));
  if (layout_name == kRowsLayout) {
    return std::optional<PanelLayout>();
  }
  PanelCodes codes = PanelCodes::kFloat;
  if (layout_name == kPanel32Q8Layout) {
    codes = PanelCodes::kInt8;
  } else if (layout_name == kPanel32Q4Layout) {
    codes = PanelCodes::kInt4;
  } else if (layout_name != kPanel32Layout) {
    return invalid_argument("attribute '", kWeightLayoutAttr, "': expected '", kRowsLayout, "', '", kPanel32Layout,
                            "', '", kPanel32Q8Layout, "' or '", kPanel32Q4Layout, "', found '", layout_name, "'");
  }
  STATICLM_ASSIGN_OR_RETURN(std::vector<int64_t> shapes, attrs.get_ints(kWeightShapesAttr));
  if (matrix < 0 || shapes.size() % 2 != 0 || static_cast<int64_t>(shapes.size() / 2) <= matrix) {
    return invalid_argument("attribute '", kWeightShapesAttr, "': expected [N, K] for matrix input ", matrix,
                            ", found ", shapes.size(), " values");
  }
  const int64_t rows = shapes[static_cast<size_t>(2 * matrix)];
  const int64_t cols = shapes[static_cast<size_t>(2 * matrix + 1)];
  // Bounded so the packed sizes below cannot overflow; a real matrix is far smaller.
  constexpr int64_t kMaxDim = int64_t{1} << 31;
  if (rows <= 0 || cols <= 0 || rows > kMaxDim || cols > kMaxDim) {
    return invalid_argument("attribute '", kWeightShapesAttr, "': matrix ", matrix, " has shape [", rows, ", ", cols,
                            "]; expected dimensions in [1, 2^31]");
  }
  PanelLayout layout;
  if (codes == PanelCodes::kFloat) {
    if (!is_packable_dtype(spec.dtype)) {
      return invalid_argument("weight_layout ", kPanel32Layout, ": expected an f32, f16 or bf16 matrix, found ",
                              dtype_name(spec.dtype));
    }
    layout = PanelLayout::of(rows, cols, spec.dtype);
  } else {
    STATICLM_ASSIGN_OR_RETURN(const int64_t group, attrs.get_int(kWeightGroupAttr));
    if (!is_quant_group(group)) {
      return invalid_argument("attribute '", kWeightGroupAttr, "': expected 16, 32, 64 or 128, found ", group);
    }
    if (spec.dtype != DType::kU8) {
      return invalid_argument("weight_layout ", layout_name, ": expected a u8 matrix, found ", dtype_name(spec.dtype));
    }
    layout = PanelLayout::quantized(rows, cols, codes, group);
  }
  if (spec.shape != layout.packed_shape()) {
    return invalid_argument("weight_layout ", layout_name, ": a ", dtype_name(spec.dtype), " [", rows, ", ", cols,
                            "] matrix is stored as ", shape_string(layout.packed_shape()), ", found ",
                            shape_string(spec.shape));
  }
  return std::optional<PanelLayout>(layout);
}

Result<Shape> logical_matrix_shape(const Attributes& attrs, int64_t matrix, const TensorSpec& spec) {
  STATICLM_ASSIGN_OR_RETURN(std::optional<PanelLayout> layout, matrix_layout(attrs, matrix, spec));
  if (!layout) {
    return spec.shape;
  }
  return Shape{layout->rows, layout->cols};
}

void pack_panels(std::span<const uint8_t> rows_data, size_t element_bytes, const PanelLayout& layout,
                 std::span<uint8_t> out) {
  std::memset(out.data(), 0, out.size());
  switch (element_bytes) {
    case 4:
      pack_typed(reinterpret_cast<const uint32_t*>(rows_data.data()), layout, reinterpret_cast<uint32_t*>(out.data()));
      break;
    case 2:
      pack_typed(reinterpret_cast<const uint16_t*>(rows_data.data()), layout, reinterpret_cast<uint16_t*>(out.data()));
      break;
    default: pack_typed(reinterpret_cast<const uint8_t*>(rows_data.data()), layout, out.data()); break;
  }
}

}  // namespace staticlm
