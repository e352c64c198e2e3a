// SPDX-License-Identifier: Apache-2.0
// Element reads and writes shared by the portable kernels: float weights of any float dtype
// (f32, f16, bf16) widened to f32, rows of block-quantized matrices (q8_0, q4_0) dequantized to
// f32, cache rows (f32, f16, q8_0), and index values (i32, i64). Callers have checked the dtypes at
// kernel creation; these helpers do no validation.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>

#include "staticlm/core/dtype.h"
#include "staticlm/core/half.h"
#include "staticlm/ops/panel_quant.h"
#include "staticlm/ops/weight_layout.h"

namespace staticlm::portable {

inline bool is_float_weight_dtype(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}
inline bool is_matrix_weight_dtype(DType dtype) {
  return is_float_weight_dtype(dtype) || dtype == DType::kQ8_0 || dtype == DType::kQ4_0;
}
inline bool is_index_dtype(DType dtype) {
  return dtype == DType::kI32 || dtype == DType::kI64;
}

// Element `index` of a float-weight buffer, as f32.
inline float load_float(const void* data, DType dtype, int64_t index) {
  switch (dtype) {
    case DType::kF16: return f16_to_f32(static_cast<const uint16_t*>(data)[index]);
    case DType::kBF16: return bf16_to_f32(static_cast<const uint16_t*>(data)[index]);
    default: return static_cast<const float*>(data)[index];
  }
}

// Dequantizes `blocks` blocks starting at block `first` (docs/ops.md: a q8_0 block is an f16
// scale and 32 int8 values; a q4_0 block an f16 scale and 16 bytes holding 32 4-bit values,
// element j in the low nibble of byte j and element j + 16 in its high nibble, each minus 8).
inline void dequantize_blocks(const void* data, DType dtype, int64_t first, int64_t blocks, float* out) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  const size_t block_bytes = dtype == DType::kQ8_0 ? 34 : 18;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = bytes + static_cast<size_t>(first + b) * block_bytes;
    uint16_t scale_bits = 0;
    std::memcpy(&scale_bits, block, sizeof(scale_bits));
    const float scale = f16_to_f32(scale_bits);
    float* row = out + b * 32;
    if (dtype == DType::kQ8_0) {
      for (int j = 0; j < 32; ++j) {
        row[j] = scale * static_cast<float>(static_cast<int8_t>(block[2 + j]));
      }
    } else {
      for (int j = 0; j < 16; ++j) {
        row[j] = scale * static_cast<float>((block[2 + j] & 0x0F) - 8);
        row[j + 16] = scale * static_cast<float>((block[2 + j] >> 4) - 8);
      }
    }
  }
}

// Widens elements [offset, offset + count) of a float-weight or block-quantized buffer into
// `out` (for a quantized one, offset and count are whole blocks: rows of a matrix).
inline void widen_to_f32(const void* data, DType dtype, int64_t offset, int64_t count, float* out) {
  if (dtype == DType::kQ8_0 || dtype == DType::kQ4_0) {
    dequantize_blocks(data, dtype, offset / 32, count / 32, out);
  } else if (dtype == DType::kF16) {
    const uint16_t* source = static_cast<const uint16_t*>(data) + offset;
    for (int64_t i = 0; i < count; ++i) {
      out[i] = f16_to_f32(source[i]);
    }
  } else if (dtype == DType::kBF16) {
    const uint16_t* source = static_cast<const uint16_t*>(data) + offset;
    for (int64_t i = 0; i < count; ++i) {
      out[i] = bf16_to_f32(source[i]);
    }
  } else {
    std::memcpy(out, static_cast<const float*>(data) + offset, static_cast<size_t>(count) * sizeof(float));
  }
}

// A matrix input (linear weight, embedding table) as its kernel reads it: logical [rows, cols],
// stored as rows or packed in panels (ops/weight_layout.h), float or quantized.
struct MatrixRef {
  DType dtype = DType::kF32;  // u8 for quantized panels
  int64_t rows = 0;
  int64_t cols = 0;
  std::optional<PanelLayout> panels;  // nullopt: row-major
};

// Widens logical row `row` of a float panel layout: its lane of each k group, the address
// arithmetic of PanelLayout::index (divisions by the runtime group) done once per row.
template <typename Element, typename Widen>
void widen_panel_row(const Element* data, const PanelLayout& layout, int64_t row, float* out, Widen widen) {
  const int64_t group = layout.group;
  const int64_t step = kPanelWidth * group;
  const Element* lane = data + (row / kPanelWidth) * layout.panel_elements() + (row % kPanelWidth) * group;
  for (int64_t g = 0, c = 0; c < layout.cols; ++g) {
    for (int64_t j = 0; j < group && c < layout.cols; ++j, ++c) {
      out[c] = widen(lane[g * step + j]);
    }
  }
}

// Widens logical row `row` of `matrix` (stored at `data`) into out[0, cols).
inline void widen_matrix_row(const void* data, const MatrixRef& matrix, int64_t row, float* out) {
  if (!matrix.panels) {
    widen_to_f32(data, matrix.dtype, row * matrix.cols, matrix.cols, out);
    return;
  }
  if (matrix.panels->is_quantized()) {
    dequantize_panel_row(static_cast<const uint8_t*>(data), *matrix.panels, row, out);
    return;
  }
  switch (matrix.dtype) {
    case DType::kF16: widen_panel_row(static_cast<const uint16_t*>(data), *matrix.panels, row, out, f16_to_f32); return;
    case DType::kBF16:
      widen_panel_row(static_cast<const uint16_t*>(data), *matrix.panels, row, out, bf16_to_f32);
      return;
    default: widen_panel_row(static_cast<const float*>(data), *matrix.panels, row, out, [](float v) { return v; });
  }
}

// Element `index` of an index buffer (i32 or i64).
inline int64_t load_index(const void* data, DType dtype, int64_t index) {
  if (dtype == DType::kI32) {
    return static_cast<const int32_t*>(data)[index];
  }
  return static_cast<const int64_t*>(data)[index];
}

// Cache elements by storage type: f32 caches are float, f16 caches are uint16_t bits.
inline float cache_to_f32(float value) {
  return value;
}
inline float cache_to_f32(uint16_t bits) {
  return f16_to_f32(bits);
}
inline void store_cache(float value, float* out) {
  *out = value;
}
inline void store_cache(float value, uint16_t* out) {
  *out = f32_to_f16(value);
}

inline bool is_cache_storage_dtype(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kQ8_0;
}

// Bytes of one cache row of head_dim values: f32 or f16 elements, or head_dim / 32 q8_0 blocks.
inline int64_t cache_row_bytes(DType dtype, int64_t head_dim) {
  const DTypeInfo& info = dtype_info(dtype);
  return head_dim / info.block_elements * info.block_bytes;
}

// `count` values (a multiple of 32) as q8_0 blocks, as ggml's q8_0 stores them: per block the
// scale d = max |x| / 127 rounded to f16, then each code round(x / d) (halves away from zero)
// against that rounded d, so a block's largest value comes back within half a step. d is at most
// f16's largest, 65504 (codes then saturate at ±127), so a block of huge finite values reads back
// finite; a block with a NaN or infinity gets a NaN scale and zero codes, so every read of it is
// NaN, not a finite guess.
inline void quantize_q8_0(const float* x, int64_t count, uint8_t* out) {
  constexpr float kLargestScale = 65504.0f;
  for (int64_t b = 0; b < count / 32; ++b, x += 32, out += 34) {
    float amax = 0.0f;
    bool finite = true;
    for (int j = 0; j < 32; ++j) {
      finite = finite && std::isfinite(x[j]);
      amax = std::max(amax, std::fabs(x[j]));
    }
    if (!finite) {
      const uint16_t nan_bits = f32_to_f16(std::numeric_limits<float>::quiet_NaN());
      std::memcpy(out, &nan_bits, sizeof(nan_bits));
      std::memset(out + 2, 0, 32);
      continue;
    }
    const uint16_t scale_bits = f32_to_f16(std::min(amax / 127.0f, kLargestScale));
    std::memcpy(out, &scale_bits, sizeof(scale_bits));
    const float scale = f16_to_f32(scale_bits);
    const float inverse = scale > 0.0f ? 1.0f / scale : 0.0f;
    for (int j = 0; j < 32; ++j) {
      const float code = std::clamp(std::round(x[j] * inverse), -127.0f, 127.0f);
      out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(code));
    }
  }
}

// Writes `row` (head_dim floats) as row `index` of a cache in `dtype`.
inline void store_cache_row(const float* row, DType dtype, void* cache, int64_t index, int64_t head_dim) {
  uint8_t* out = static_cast<uint8_t*>(cache) + index * cache_row_bytes(dtype, head_dim);
  if (dtype == DType::kF32) {
    std::memcpy(out, row, static_cast<size_t>(head_dim) * sizeof(float));
  } else if (dtype == DType::kF16) {
    auto* bits = reinterpret_cast<uint16_t*>(out);
    for (int64_t d = 0; d < head_dim; ++d) {
      bits[d] = f32_to_f16(row[d]);
    }
  } else {
    quantize_q8_0(row, head_dim, out);
  }
}

// Row `index` of a cache in `dtype` as f32: an f32 row where it lies, others widened into
// `buffer` (head_dim floats).
inline const float* load_cache_row(const void* cache, DType dtype, int64_t index, int64_t head_dim, float* buffer) {
  const uint8_t* row = static_cast<const uint8_t*>(cache) + index * cache_row_bytes(dtype, head_dim);
  if (dtype == DType::kF32) {
    return reinterpret_cast<const float*>(row);
  }
  if (dtype == DType::kF16) {
    const auto* bits = reinterpret_cast<const uint16_t*>(row);
    for (int64_t d = 0; d < head_dim; ++d) {
      buffer[d] = f16_to_f32(bits[d]);
    }
  } else {
    dequantize_blocks(row, DType::kQ8_0, 0, head_dim / 32, buffer);
  }
  return buffer;
}

}  // namespace staticlm::portable
