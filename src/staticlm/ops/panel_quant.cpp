// SPDX-License-Identifier: Apache-2.0
#include "staticlm/ops/panel_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "staticlm/core/half.h"

namespace staticlm {
namespace {

// The f16 scale of one lane's group `x` (its valid values), as stored.
uint16_t group_scale(std::span<const float> x, PanelCodes codes) {
  float extreme = 0.0f;  // int8: the largest magnitude; int4: the value that has it
  for (float v : x) {
    if (std::fabs(v) > std::fabs(extreme)) {
      extreme = v;
    }
  }
  const float d = codes == PanelCodes::kInt8 ? std::fabs(extreme) / 127.0f : extreme / -8.0f;
  return f32_to_f16(d);
}

int32_t quantize_value(float x, float inverse, PanelCodes codes) {
  const float lo = codes == PanelCodes::kInt8 ? -127.0f : -8.0f;
  const float hi = codes == PanelCodes::kInt8 ? 127.0f : 7.0f;
  return static_cast<int32_t>(std::clamp(std::nearbyint(x * inverse), lo, hi));
}

void store_code(uint8_t* codes_area, PanelCodes codes, int64_t lane, int64_t k, int32_t q) {
  uint8_t& byte = codes_area[code_byte(codes, lane, k)];
  const auto stored = static_cast<uint8_t>(q + code_offset(codes));
  if (codes == PanelCodes::kInt8) {
    byte = stored;
  } else if (code_in_high_nibble(k)) {
    byte = static_cast<uint8_t>((byte & 0x0F) | (stored << 4));
  } else {
    byte = static_cast<uint8_t>((byte & 0xF0) | stored);
  }
}

int32_t load_code(const uint8_t* codes_area, PanelCodes codes, int64_t lane, int64_t k) {
  const uint8_t byte = codes_area[code_byte(codes, lane, k)];
  if (codes == PanelCodes::kInt8) {
    return static_cast<int32_t>(byte) - 128;
  }
  return static_cast<int32_t>(code_in_high_nibble(k) ? byte >> 4 : byte & 0x0F) - 8;
}

}  // namespace

Status quantize_panels(std::span<const float> rows, const PanelLayout& layout, std::span<uint8_t> out,
                       std::string_view name) {
  const int64_t g = layout.group;
  // Every code starts as q = 0, scales as 0 (the padding lanes keep both).
  const uint8_t zero = layout.codes == PanelCodes::kInt8 ? 0x80 : 0x88;
  for (int64_t p = 0; p < layout.panels(); ++p) {
    for (int64_t group = 0; group < layout.groups(); ++group) {
      uint8_t* block = out.data() + p * layout.panel_elements() + group * layout.group_units();
      std::memset(block, 0, static_cast<size_t>(kPanelScaleBytes));
      std::memset(block + kPanelScaleBytes, zero, static_cast<size_t>(layout.group_units() - kPanelScaleBytes));
      const int64_t first = group * g;
      const int64_t count = std::min(g, layout.cols - first);
      for (int64_t lane = 0; lane < kPanelWidth; ++lane) {
        const int64_t r = p * kPanelWidth + lane;
        if (r >= layout.rows) {
          break;
        }
        const std::span<const float> x =
            rows.subspan(static_cast<size_t>(r * layout.cols + first), static_cast<size_t>(count));
        for (int64_t k = 0; k < count; ++k) {
          if (!std::isfinite(x[static_cast<size_t>(k)])) {
            return invalid_argument("tensor '", name, "': element [", r, ", ", first + k, "] is ",
                                    x[static_cast<size_t>(k)], "; quantizing needs finite weights");
          }
        }
        const uint16_t scale_bits = group_scale(x, layout.codes);
        const float scale = f16_to_f32(scale_bits);
        if (!std::isfinite(scale)) {
          return invalid_argument("tensor '", name, "': row ", r, " columns [", first, ", ", first + count,
                                  "): the group's scale overflows f16");
        }
        std::memcpy(block + lane * 2, &scale_bits, sizeof(scale_bits));
        const float inverse = scale != 0.0f ? 1.0f / scale : 0.0f;
        for (int64_t k = 0; k < count; ++k) {
          store_code(block + kPanelScaleBytes, layout.codes, lane, k,
                     quantize_value(x[static_cast<size_t>(k)], inverse, layout.codes));
        }
      }
    }
  }
  return ok_status();
}

void dequantize_panel_row(const uint8_t* data, const PanelLayout& layout, int64_t row, float* out) {
  const int64_t lane = row % kPanelWidth;
  const uint8_t* panel = data + (row / kPanelWidth) * layout.panel_elements();
  for (int64_t group = 0; group < layout.groups(); ++group) {
    const uint8_t* block = panel + group * layout.group_units();
    uint16_t scale_bits = 0;
    std::memcpy(&scale_bits, block + lane * 2, sizeof(scale_bits));
    const float scale = f16_to_f32(scale_bits);
    const int64_t first = group * layout.group;
    const int64_t count = std::min(layout.group, layout.cols - first);
    for (int64_t k = 0; k < count; ++k) {
      out[first + k] = scale * static_cast<float>(load_code(block + kPanelScaleBytes, layout.codes, lane, k));
    }
  }
}

}  // namespace staticlm
