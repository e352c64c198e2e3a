// SPDX-License-Identifier: Apache-2.0
// The bf16 GEMM on AMX tiles (Intel Sapphire Rapids and later): tdpbf16ps multiplies a 16 x 32
// bf16 tile of x by a 32 x 16 tile of weights into 16 x 16 f32 sums, 8192 multiply-adds per
// instruction where vdpbf16ps does 32. A bf16 panel32 weight already is the B operand: row g of
// a panel holds pair g (k = 2g, 2g + 1) of its 32 columns, so 16 pairs of 16 columns are one
// tile read with a 128-byte stride, with no repacking. x is rounded to bf16 once per call by the
// caller (round_to_bf16_avx512bf16), as for the vdpbf16ps GEMM.
//
// Tiles: 0-3 hold the sums of a block of 32 rows x 32 columns (two row halves x two column
// halves), 4-5 the two row halves of x, 6-7 the two column halves of the panel. Each thread
// configures its tiles per call and releases them at the end.
#include <immintrin.h>

#include <cstring>

#include "staticlm/backends/cpu/kernels/x86/amx_tiles.h"
#include "staticlm/backends/cpu/kernels/x86/linear_x86.h"

#pragma GCC push_options
#pragma GCC target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")

namespace staticlm::cpu {
namespace {

constexpr int kTileRows = static_cast<int>(kTileBlockRows);  // rows of x (and of sums) per tile
constexpr int kTilePairs = 16;                               // pairs of K per step: 32 bf16 of a row of x
constexpr int kTileBytes = 64;                               // bytes of a tile row
constexpr int64_t kBlockRows = 2 * kTileRows;                // rows of x per block
constexpr int64_t kPanelBytes = kPanelColumns * 4;           // a panel row: 32 pairs of bf16

// Sums of `first` rows in tiles 0-1 and 4, of `second` rows (0: unused) in tiles 2-3 and 5.
void configure(int first, int second) {
  amx::TileConfig config;
  const int rows_of[8] = {first, first, second, second, first, second, kTilePairs, kTilePairs};
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = static_cast<uint8_t>(rows_of[t]);
    config.bytes_per_row[t] = rows_of[t] > 0 ? kTileBytes : 0;
  }
  amx::keep_written(config);
  _tile_loadconfig(&config);
}

// Where the tiles of one K step come from: x's two row halves (row stride x_stride) and the
// panel's rows of pairs (stride kPanelBytes); the K tail's zero-padded copies have their own.
struct StepSource {
  const uint8_t* x0;
  const uint8_t* x1;
  int64_t x_stride;
  const uint8_t* w;
};

// How far ahead of its tile loads the first block of rows asks for a panel's lines: the
// weights stream from memory once per call (the later blocks of rows find them in cache).
inline constexpr int64_t kAheadBytes = 2 * kTilePairs * kPanelBytes;

inline void prefetch_step(const uint8_t* p) {
#pragma GCC unroll 32
  for (int64_t line = 0; line < kTilePairs * kPanelBytes; line += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(p + line), _MM_HINT_T0);
  }
}

template <bool TWO>
inline void multiply_step(const StepSource& s) {
  _tile_loadd(4, s.x0, s.x_stride);
  if constexpr (TWO) {
    _tile_loadd(5, s.x1, s.x_stride);
  }
  _tile_loadd(6, s.w, kPanelBytes);
  _tile_loadd(7, s.w + kTileBytes, kPanelBytes);
  _tile_dpbf16ps(0, 4, 6);
  _tile_dpbf16ps(1, 4, 7);
  if constexpr (TWO) {
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
}

// Writes the block's sums (rows [m0, m0 + rows), the panel's columns from n0) to out, through
// `staging` (kBlockRows x kPanelColumns floats) where the panel is partial.
template <bool TWO>
void store_sums(const LinearOperands& op, int64_t m0, int64_t rows, int64_t n0, float* staging) {
  const int64_t cols = op.columns - n0 < kPanelColumns ? op.columns - n0 : kPanelColumns;
  const bool full = cols == kPanelColumns;
  float* base = full ? op.out + m0 * op.columns + n0 : staging;
  const int64_t stride = (full ? op.columns : kPanelColumns) * static_cast<int64_t>(sizeof(float));
  _tile_stored(0, base, stride);
  _tile_stored(1, base + 16, stride);
  if constexpr (TWO) {
    _tile_stored(2, base + kTileRows * stride / static_cast<int64_t>(sizeof(float)), stride);
    _tile_stored(3, base + kTileRows * stride / static_cast<int64_t>(sizeof(float)) + 16, stride);
  }
  if (!full) {
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(op.out + (m0 + r) * op.columns + n0, staging + r * kPanelColumns,
                  static_cast<size_t>(cols) * sizeof(float));
    }
  }
}

// Rows [m0, m0 + rows) (at most kBlockRows; more than kTileRows when TWO) against panels
// [p_begin, p_end): every panel reuses the block's rows of x. K runs in steps of 16 pairs; a last
// step of fewer reads zero-padded copies of x's and the panel's tail pairs.
template <bool TWO>
void block_rows(const LinearOperands& op, int64_t m0, int64_t rows, int64_t p_begin, int64_t p_end, float* scratch) {
  const int64_t pairs = op.inner / 2;
  const int64_t steps = pairs / kTilePairs;
  const int64_t tail = pairs % kTilePairs;
  const int64_t x_stride = op.inner * static_cast<int64_t>(sizeof(uint16_t));
  const uint8_t* x = reinterpret_cast<const uint8_t*>(op.x_bf16 + m0 * op.inner);
  // scratch: the x tail [kBlockRows][64 bytes], the panel tail [16][128 bytes], the staging.
  uint8_t* x_tail = reinterpret_cast<uint8_t*>(scratch);
  uint8_t* w_tail = x_tail + kBlockRows * kTileBytes;
  float* staging = reinterpret_cast<float*>(w_tail + kTilePairs * kPanelBytes);
  if (tail > 0) {
    std::memset(x_tail, 0, kBlockRows * kTileBytes);
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(x_tail + r * kTileBytes, x + r * x_stride + steps * kTileBytes, static_cast<size_t>(tail) * 4);
    }
  }
  const int64_t second = TWO ? kTileRows * x_stride : 0;
  for (int64_t p = p_begin; p < p_end; ++p) {
    const uint8_t* panel = static_cast<const uint8_t*>(op.weight) + p * op.panel_elements * 2;
    _tile_zero(0);
    _tile_zero(1);
    if constexpr (TWO) {
      _tile_zero(2);
      _tile_zero(3);
    }
    for (int64_t s = 0; s < steps; ++s) {
      const uint8_t* w = panel + s * kTilePairs * kPanelBytes;
      if (m0 == 0) {
        prefetch_step(w + kAheadBytes);  // past the panel's end: the next panel's first lines
      }
      multiply_step<TWO>({x + s * kTileBytes, x + second + s * kTileBytes, x_stride, w});
    }
    if (tail > 0) {
      std::memset(w_tail, 0, kTilePairs * kPanelBytes);
      std::memcpy(w_tail, panel + steps * kTilePairs * kPanelBytes, static_cast<size_t>(tail * kPanelBytes));
      multiply_step<TWO>({x_tail, x_tail + kTileRows * kTileBytes, kTileBytes, w_tail});
    }
    store_sums<TWO>(op, m0, rows, p * kPanelColumns, staging);
  }
}

void amx_gemm(const LinearOperands& op, int64_t n_begin, int64_t n_end, float* scratch) {
  const int64_t p_begin = n_begin / kPanelColumns;
  const int64_t p_end = (n_end + kPanelColumns - 1) / kPanelColumns;
  int configured = -1;  // the rows of the block the tiles are configured for
  for (int64_t m0 = 0; m0 < op.rows; m0 += kBlockRows) {
    const int64_t rows = op.rows - m0 < kBlockRows ? op.rows - m0 : kBlockRows;
    if (rows != configured) {
      configure(static_cast<int>(rows < kTileRows ? rows : kTileRows),
                static_cast<int>(rows > kTileRows ? rows - kTileRows : 0));
      configured = static_cast<int>(rows);
    }
    if (rows > kTileRows) {
      block_rows<true>(op, m0, rows, p_begin, p_end, scratch);
    } else {
      block_rows<false>(op, m0, rows, p_begin, p_end, scratch);
    }
  }
  _tile_release();
}

}  // namespace

void linear_columns_amx_bf16(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch) {
  // Whether x was rounded (a call of at least kTileMinRows rows) decides, not the rows of this
  // slice of it: every slice of one call multiplies alike.
  if (operands.x_bf16 != nullptr && operands.weight_dtype == DType::kBF16 && operands.inner % 2 == 0) {
    amx_gemm(operands, n_begin, n_end, scratch);
    return;
  }
  linear_columns_avx512(operands, n_begin, n_end, scratch);
}

}  // namespace staticlm::cpu

#pragma GCC pop_options
