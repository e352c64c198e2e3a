// SPDX-License-Identifier: Apache-2.0
// The int8 / int4 GEMM on AMX tiles (Intel Sapphire Rapids and later): tdpbsud multiplies a tile
// of x's int8 codes (signed; 16 rows of up to 64 k) by a tile of weight codes (unsigned: q +
// offset; 16 columns) into 16 x 16 int32 sums, up to 16384 multiply-adds per instruction where
// vpdpbusd does 64. Nothing is repacked: a panel's word rows are the B operand as stored (row s
// holds k = 4s..4s + 3 of its 32 columns, so 16 columns are one tile read with a 128-byte
// stride), x's codes are row-major (quantized_rows.h), and int4 groups are unpacked to int8 once
// per span, as the VNNI chunk path unpacks them (linear_quant_tiles.h).
//
// Each group of k has its own scales (one per weight column, one per row of x), so a group's
// integer sums become floats before the next group's: the sum tiles are stored, and each row's
// sums, less the offset times the row's code sum, are scaled and added to float sums by the VNNI
// kernel's own scale_group, in group order: the results equal the VNNI kernel's bit for bit.
//
// Tiles: 0-1 and 2-3 two buffers of the int32 sums of a block of 16 rows x 32 columns (column
// halves), 4 and 5 the block's codes of x for each buffer, 6-7 the column halves of the panel's
// codes. A group of more than 64 k takes several steps into the same sums. Each thread
// configures its tiles per call and releases them at the end.
//
// g++ 12 warns that the undefined-vector placeholders inside some AVX-512 intrinsics are
// uninitialised: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>

#include "staticlm/backends/cpu/kernels/quantized_rows.h"
#include "staticlm/backends/cpu/kernels/x86/amx_tiles.h"
#include "staticlm/backends/cpu/kernels/x86/linear_x86.h"

#pragma GCC push_options
#pragma GCC target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")

#include "staticlm/backends/cpu/kernels/linear_quant_tiles.h"
#include "staticlm/backends/cpu/kernels/x86/simd_avx512_vnni.h"

namespace staticlm::cpu {
namespace {

using Q = simd::Avx512Vnni;
using qtiles::kRegs;
using qtiles::kScaleBytes;
using qtiles::kWordRowBytes;

constexpr int kTileRows = 16;       // rows of x (and of sums) per tile: a block of rows
constexpr int64_t kTileBytes = 64;  // bytes of a tile row: at most 64 k of x per step
// Bytes of int8 panels every block of rows runs over before the next run: within a 1 MiB L2
// beside x's codes (SmolLM's matrices fit whole; Llama-3.2-1B's gate / up take 17 MiB).
constexpr int64_t kPanelRunBytes = 768 * 1024;

// Tiles 0-1 and 2-3: two buffers of a block's sums (column halves), `rows` rows; 4 and 5: the
// block's codes of x for each buffer, `step_k` bytes a row; 6-7: the panel's column halves,
// step_k / 4 word rows.
void configure(int rows, int step_k) {
  amx::TileConfig config;
  const int rows_of[8] = {rows, rows, rows, rows, rows, rows, step_k / 4, step_k / 4};
  const int bytes_of[8] = {kTileBytes, kTileBytes, kTileBytes, kTileBytes, step_k, step_k, kTileBytes, kTileBytes};
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = static_cast<uint8_t>(rows_of[t]);
    config.bytes_per_row[t] = static_cast<uint16_t>(rows_of[t] > 0 ? bytes_of[t] : 0);
  }
  amx::keep_written(config);
  _tile_loadconfig(&config);
}

// What a call's blocks share: x's codes and their row stride, and the steps of a group.
struct CallShape {
  const uint8_t* x_codes;
  int64_t x_stride;  // bytes per row of codes: groups * group
  int64_t step_k;    // k per tile step: the group, at most kTileBytes
  int64_t steps;     // steps per group: whole, as groups are 16, 32, 64 or 128 (weight_layout.cpp)
};

// One group's integer sums of the block (x's codes from `x`, the group's word rows from `codes`)
// into sum buffer BUF (the tile intrinsics take their tile numbers as literals). Tiles are not
// renamed: a load into a tile waits for the multiplies still reading it, so each buffer has its
// own tile of x's codes, and each column half's weights are loaded just before their multiply
// (with one tile of x, the next group's load of it waited on those multiplies and dominated
// this function's profile; linear_bench gemm_q8_amx, one thread).
template <int BUF>
void multiply_group(const CallShape& call, const uint8_t* x, const uint8_t* codes) {
  if constexpr (BUF == 0) {
    _tile_zero(0);
    _tile_zero(1);
  } else {
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int64_t s = 0; s < call.steps; ++s) {
    const uint8_t* w = codes + s * (call.step_k / 4) * kWordRowBytes;
    if constexpr (BUF == 0) {
      _tile_loadd(4, x + s * call.step_k, call.x_stride);
      _tile_loadd(6, w, kWordRowBytes);
      _tile_dpbsud(0, 4, 6);
      _tile_loadd(7, w + kTileBytes, kWordRowBytes);
      _tile_dpbsud(1, 4, 7);
    } else {
      _tile_loadd(5, x + s * call.step_k, call.x_stride);
      _tile_loadd(6, w, kWordRowBytes);
      _tile_dpbsud(2, 5, 6);
      _tile_loadd(7, w + kTileBytes, kWordRowBytes);
      _tile_dpbsud(3, 5, 7);
    }
  }
}

template <int BUF>
void store_group(int32_t (*ints)[kPanelColumns]) {
  constexpr int64_t kStride = kPanelColumns * static_cast<int64_t>(sizeof(int32_t));
  if constexpr (BUF == 0) {
    _tile_stored(0, ints[0], kStride);
    _tile_stored(1, ints[0] + kTileRows, kStride);
  } else {
    _tile_stored(2, ints[0], kStride);
    _tile_stored(3, ints[0] + kTileRows, kStride);
  }
}

// Rows [m0, m0 + rows) (at most kTileRows) over a span of one panel's groups: float sums kept in
// `sums` across the span, read from out (a later span) and written back at its end. The tiles
// multiply group gi + 1 into one buffer while the vector units scale group gi's sums out of the
// other: with one buffer, each group's tile loads waited for the multiplies before them and the
// multiplies for the scaling. `stream`: ask for the span's lines ahead of the tile loads (the
// first block of rows, which reads the panel from memory).
void block_rows(const LinearOperands& op, const CallShape& call, const qtiles::GroupSpan& span, int64_t m0,
                int64_t rows, int64_t n0, bool stream) {
  const QuantizedRows& xq = *op.x_quantized;
  const int64_t cols = op.columns - n0 < kPanelColumns ? op.columns - n0 : kPanelColumns;
  alignas(64) float sums[kTileRows][kPanelColumns];
  alignas(64) int32_t ints[kTileRows][kPanelColumns];
  // Written out in registers: as a loop of scalars the first and last steps were a visible share
  // of the block's time, as SmolLM's K of 576 has only 18 groups of 32 (linear_bench gemm_q8_amx).
  for (int64_t r = 0; r < rows; ++r) {
    const float* out = op.out + (m0 + r) * op.columns + n0;
#pragma GCC unroll 4
    for (int c = 0; c < kRegs<Q>; ++c) {
      const int lanes = static_cast<int>(cols - c * Q::kWidth);
      Q::Reg v = Q::zero();
      if (span.first > 0 && lanes >= Q::kWidth) {
        v = Q::load(tiles::F32{}, out + c * Q::kWidth);
      } else if (span.first > 0 && lanes > 0) {
        v = Q::load_tail(tiles::F32{}, out + c * Q::kWidth, lanes);
      }
      Q::store(sums[r] + c * Q::kWidth, v);
    }
  }
  const uint8_t* x = call.x_codes + m0 * call.x_stride;
  auto group_start = [&](int64_t gi) { return span.base + (gi - span.first) * span.stride; };
  auto multiply = [&](int64_t gi, bool second) {
    const uint8_t* start = group_start(gi);
    if (stream) {
      for (int64_t line = 0; line < span.stride; line += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(start + tiles::kGemvPrefetchBytes + line), _MM_HINT_T0);
      }
    }
    if (second) {
      multiply_group<1>(call, x + gi * op.group, start + kScaleBytes);
    } else {
      multiply_group<0>(call, x + gi * op.group, start + kScaleBytes);
    }
  };
  multiply(span.first, false);
  for (int64_t gi = span.first; gi < span.last; ++gi) {
    const bool second = (gi - span.first) % 2 == 1;
    if (second) {
      store_group<1>(ints);
    } else {
      store_group<0>(ints);
    }
    if (gi + 1 < span.last) {
      multiply(gi + 1, !second);
    }
    for (int64_t r = 0; r < rows; ++r) {
      Q::Reg acc[kRegs<Q>];
      Q::IReg ia[kRegs<Q>];
#pragma GCC unroll 4
      for (int c = 0; c < kRegs<Q>; ++c) {
        acc[c] = Q::load(tiles::F32{}, sums[r] + c * Q::kWidth);
        ia[c] = _mm512_load_si512(ints[r] + c * Q::kWidth);
      }
      qtiles::scale_group<Q>(acc, ia, group_start(gi), span.offset * xq.row_sums(m0 + r)[gi],
                             xq.row_scales(m0 + r)[gi]);
#pragma GCC unroll 4
      for (int c = 0; c < kRegs<Q>; ++c) {
        Q::store(sums[r] + c * Q::kWidth, acc[c]);
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    float* out = op.out + (m0 + r) * op.columns + n0;
#pragma GCC unroll 4
    for (int c = 0; c < kRegs<Q>; ++c) {
      const int lanes = static_cast<int>(cols - c * Q::kWidth);
      if (lanes >= Q::kWidth) {
        Q::store(out + c * Q::kWidth, Q::load(tiles::F32{}, sums[r] + c * Q::kWidth));
      } else if (lanes > 0) {
        Q::store_tail(out + c * Q::kWidth, Q::load(tiles::F32{}, sums[r] + c * Q::kWidth), lanes);
      }
    }
  }
}

// Rows [m0, m0 + kTileRows) (fewer at the end) over a span of panel p, the tiles configured for
// the block's rows first where `configured` (the rows they are set for) differs.
void run_block(const LinearOperands& op, const CallShape& call, const qtiles::GroupSpan& span, int64_t m0, int64_t p,
               bool stream, int& configured) {
  const int64_t rows = op.rows - m0 < kTileRows ? op.rows - m0 : kTileRows;
  if (rows != configured) {
    configure(static_cast<int>(rows), static_cast<int>(call.step_k));
    configured = static_cast<int>(rows);
  }
  block_rows(op, call, span, m0, rows, p * kPanelColumns, stream);
}

void amx_gemm(const LinearOperands& op, int64_t n_begin, int64_t n_end, uint8_t* scratch) {
  const QuantizedRows& xq = *op.x_quantized;
  const int64_t step_k = op.group < kTileBytes ? op.group : kTileBytes;
  const CallShape call{reinterpret_cast<const uint8_t*>(xq.code_words.data()), xq.groups * op.group, step_k,
                       op.group / step_k};
  const int64_t p_begin = n_begin / kPanelColumns;
  const int64_t p_end = (n_end + kPanelColumns - 1) / kPanelColumns;
  int configured = -1;
  if (op.codes == PanelCodes::kInt8) {
    // Blocks of rows outside, panels inside, over runs of panels that fit in L2: a block's codes
    // of x stay in L1 while the panels go past, the first block reading them from memory and the
    // later ones from L2.
    const int64_t gbytes = qtiles::group_bytes(op);
    const int64_t run = std::max<int64_t>(1, kPanelRunBytes / op.panel_elements);
    for (int64_t p0 = p_begin; p0 < p_end; p0 += run) {
      const int64_t p1 = std::min(p_end, p0 + run);
      for (int64_t m0 = 0; m0 < op.rows; m0 += kTileRows) {
        for (int64_t p = p0; p < p1; ++p) {
          const uint8_t* panel = static_cast<const uint8_t*>(op.weight) + p * op.panel_elements;
          run_block(op, call, {panel, gbytes, 0, xq.groups, code_offset(PanelCodes::kInt8)}, m0, p, m0 == 0,
                    configured);
        }
      }
    }
  } else {
    // int4: each span of a panel unpacked once, for every block of rows.
    const int64_t per_span = qtiles::unpack_span_groups(op);
    for (int64_t p = p_begin; p < p_end; ++p) {
      const uint8_t* panel = static_cast<const uint8_t*>(op.weight) + p * op.panel_elements;
      for (int64_t first = 0; first < xq.groups; first += per_span) {
        const int64_t last = first + per_span < xq.groups ? first + per_span : xq.groups;
        const qtiles::GroupSpan span = qtiles::unpack_int4<Q>(op, panel, first, last, scratch);
        for (int64_t m0 = 0; m0 < op.rows; m0 += kTileRows) {
          run_block(op, call, span, m0, p, false, configured);
        }
      }
    }
  }
  _tile_release();
}

}  // namespace

void linear_columns_q_amx(const LinearOperands& operands, int64_t n_begin, int64_t n_end, float* scratch) {
  // Calls of a few rows stream their panels through the VNNI kernel (kQuantTileMinRows); int4
  // ones up to 32 rows, nibbles split in registers: unpacking a span per panel slowed short int4
  // prompts (`staticlm bench -p 8`, linear_bench few_rows_q4_amx).
  const bool tiles = operands.codes == PanelCodes::kInt4 ? operands.rows > qtiles::kStreamedQuantRows
                                                         : operands.rows >= kQuantTileMinRows;
  if (tiles) {
    amx_gemm(operands, n_begin, n_end, reinterpret_cast<uint8_t*>(scratch));
    return;
  }
  linear_columns_q_avx512vnni(operands, n_begin, n_end, scratch);
}

}  // namespace staticlm::cpu

#pragma GCC pop_options
