// SPDX-License-Identifier: Apache-2.0
// The linear kernels over int8 / int4 panels (panel32_q8 / panel32_q4, ops/weight_layout.h),
// written once over an integer traits type Q and instantiated by each ISA file after its target
// pragma (x86/linear_q_avx512vnni.cpp, x86/linear_q_avx2.cpp). Include it only there, after the
// pragma and inside no namespace: everything here is compiled for that ISA.
//
// Per panel and k group, the weights are 32 lanes of u8 codes (q + offset), four consecutive k
// values of a lane in one 32-bit word, and x is int8 codes per group (quantized_rows.h). A step
// multiplies one word row (32 lanes x 4 k) by four x codes broadcast to every lane, summing the
// four products per lane into int32 (Q::dot4: vpdpbusd, or its exact AVX2 equivalent); at the end
// of a group the lanes' sums, less offset x the group's x code sum, become floats scaled by the
// lane's weight scale times the group's x scale. int4 words hold k 8j..8j+3 in their low nibbles
// and 8j+4..8j+7 in their high ones: a decode step splits them in registers; a chunk unpacks a
// span of groups at a time into `scratch` as int8 codes (offset 8) and reuses it for every row.
// A chunk keeps each block of rows' float sums in registers across a span and stores them once.
//
// Q provides the float traits (Reg, kWidth, zero, fma, mul, set1, store, load(F16{}, p)) and:
// IReg; izero(); iload(p) (kWidth words at p); XWord; xword(w) (a word of four x codes, ready for
// dot4); dot4(acc, w, x); dot4_small(acc, w, x) (dot4 for weight codes below 128: int4's);
// low_nibbles(w), high_nibbles(w) (each byte's nibble as a byte);
// to_float(acc, offset_sum) (acc - offset_sum in every lane, as floats); kQuantRows (rows a chunk
// step takes at once); optionally kInt8DotOffset (below).
#pragma once

#include <cstdint>

#include "staticlm/backends/cpu/kernels/linear_columns.h"
#include "staticlm/backends/cpu/kernels/linear_tiles.h"
#include "staticlm/backends/cpu/kernels/quantized_rows.h"
#include "staticlm/backends/cpu/kernels/simd_tags.h"

namespace staticlm::cpu::qtiles {

// Bytes of a group's scales, and of one word row of codes (32 lanes x 4 bytes).
inline constexpr int64_t kScaleBytes = kPanelColumns * 2;
inline constexpr int64_t kWordRowBytes = kPanelColumns * 4;

template <class Q>
inline constexpr int kRegs = static_cast<int>(kPanelColumns) / Q::kWidth;

// The offset that Q::dot4's sums carry for stored int8 codes, which to_float takes back out: the
// stored one (vpdpbusd multiplies the u8 bytes as they are), unless Q says kInt8DotOffset (the
// AArch64 traits flip each byte's top bit, which turns q + 128 into q as a signed byte for sdot,
// so their sums carry none). int4's codes always carry theirs.
template <class Q>
constexpr int32_t dot_offset(PanelCodes codes) {
  if constexpr (requires { Q::kInt8DotOffset; }) {
    return codes == PanelCodes::kInt8 ? Q::kInt8DotOffset : code_offset(codes);
  } else {
    return code_offset(codes);
  }
}

// The bytes of one k group of a panel: scales, then codes.
inline int64_t group_bytes(const LinearOperands& op) {
  return kScaleBytes + kPanelColumns * op.group / (op.codes == PanelCodes::kInt4 ? 2 : 1);
}

// acc[c] += (ia[c] - offset * sum) * (d[c] * dx): one group's integer sums, into floats.
template <class Q>
void scale_group(typename Q::Reg* acc, const typename Q::IReg* ia, const uint8_t* group_start, int32_t offset_sum,
                 float dx) {
  const uint16_t* scales = reinterpret_cast<const uint16_t*>(group_start);
  const typename Q::Reg x_scale = Q::set1(dx);
#pragma GCC unroll 16
  for (int c = 0; c < kRegs<Q>; ++c) {
    const typename Q::Reg d = Q::load(tiles::F16{}, scales + c * Q::kWidth);
    acc[c] = Q::fma(Q::to_float(ia[c], offset_sum), Q::mul(d, x_scale), acc[c]);
  }
}

// Decode (one row of x) over PANELS adjacent panels from p: each group's word rows streamed in
// memory order, int4 nibbles split in registers. Two panels at once are two weight streams per
// thread, as the float GEMV reads them (linear_tiles.h); each panel's sums are computed exactly
// as alone (integer within a group, then one float step per group).
template <class Q, int PANELS>
void gemv_panels(const LinearOperands& op, int64_t p) {
  using Reg = typename Q::Reg;
  using IReg = typename Q::IReg;
  constexpr int kR = kRegs<Q>;
  const QuantizedRows& xq = *op.x_quantized;
  const int64_t g = op.group;
  const int64_t gbytes = group_bytes(op);
  const int32_t* x_words = xq.words(0);
  const float* x_scales = xq.row_scales(0);
  const int32_t* x_sums = xq.row_sums(0);
  const bool int4 = op.codes == PanelCodes::kInt4;
  const int32_t offset = dot_offset<Q>(op.codes);
  const uint8_t* panels[PANELS];
  Reg acc[PANELS][kR];
#pragma GCC unroll 16
  for (int i = 0; i < PANELS; ++i) {
    panels[i] = static_cast<const uint8_t*>(op.weight) + (p + i) * op.panel_elements;
#pragma GCC unroll 16
    for (int c = 0; c < kR; ++c) {
      acc[i][c] = Q::zero();
    }
  }
  for (int64_t gi = 0; gi < xq.groups; ++gi) {
    const int32_t* xw = x_words + gi * g / 4;
    const uint8_t* codes[PANELS];
    IReg ia[PANELS][kR];
#pragma GCC unroll 16
    for (int i = 0; i < PANELS; ++i) {
      const uint8_t* group_start = panels[i] + gi * gbytes;
      codes[i] = group_start + kScaleBytes;
      tiles::prefetch_lines<kScaleBytes>(reinterpret_cast<const char*>(group_start) + tiles::kGemvPrefetchBytes);
#pragma GCC unroll 16
      for (int c = 0; c < kR; ++c) {
        ia[i][c] = Q::izero();
      }
    }
    if (int4) {
      for (int64_t j = 0; j < g / 8; ++j) {
        const typename Q::XWord lo_x = Q::xword(xw[2 * j]);
        const typename Q::XWord hi_x = Q::xword(xw[2 * j + 1]);
#pragma GCC unroll 16
        for (int i = 0; i < PANELS; ++i) {
          const uint8_t* row = codes[i] + j * kWordRowBytes;
          tiles::prefetch_lines<kWordRowBytes>(reinterpret_cast<const char*>(row) + tiles::kGemvPrefetchBytes);
#pragma GCC unroll 16
          for (int c = 0; c < kR; ++c) {
            const IReg w = Q::iload(row + c * Q::kWidth * 4);
            ia[i][c] = Q::dot4_small(ia[i][c], Q::low_nibbles(w), lo_x);
            ia[i][c] = Q::dot4_small(ia[i][c], Q::high_nibbles(w), hi_x);
          }
        }
      }
    } else {
      for (int64_t s = 0; s < g / 4; ++s) {
        const typename Q::XWord x = Q::xword(xw[s]);
#pragma GCC unroll 16
        for (int i = 0; i < PANELS; ++i) {
          const uint8_t* row = codes[i] + s * kWordRowBytes;
          tiles::prefetch_lines<kWordRowBytes>(reinterpret_cast<const char*>(row) + tiles::kGemvPrefetchBytes);
#pragma GCC unroll 16
          for (int c = 0; c < kR; ++c) {
            ia[i][c] = Q::dot4(ia[i][c], Q::iload(row + c * Q::kWidth * 4), x);
          }
        }
      }
    }
#pragma GCC unroll 16
    for (int i = 0; i < PANELS; ++i) {
      scale_group<Q>(acc[i], ia[i], panels[i] + gi * gbytes, offset * x_sums[gi], x_scales[gi]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < PANELS; ++i) {
    tiles::store_panel<Q>(op, acc[i], op.out, (p + i) * kPanelColumns);
  }
}

// Groups [first, last) of a panel as int8 codes: group gi's scales at base + gi * stride, its
// codes kScaleBytes after them, whose dot4 sums carry `offset` (dot_offset: int8's in place,
// int4's for unpacked int4).
struct GroupSpan {
  const uint8_t* base = nullptr;
  int64_t stride = 0;
  int64_t first = 0;
  int64_t last = 0;
  int32_t offset = code_offset(PanelCodes::kInt8);
};

// ROWS rows from m0 over a span of groups: each word row loaded once for all of them, the float
// sums kept in registers across the span and added to out (written, for the first span). SMALL:
// the span's codes are below 128 (unpacked int4). PACKED: the span is int4 as stored, two nibbles
// a byte, split in registers (word row j holds word rows 2j and 2j + 1). `ahead`: ask for the
// span's lines kGemvPrefetchBytes ahead of the loads, as the GEMV does (the block of rows that
// streams the panel from memory).
template <class Q, int ROWS, bool SMALL, bool PACKED = false>
void gemm_rows(const LinearOperands& op, const GroupSpan& span, int64_t m0, int64_t n0, bool ahead = false) {
  using Reg = typename Q::Reg;
  using IReg = typename Q::IReg;
  constexpr int kR = kRegs<Q>;
  const QuantizedRows& xq = *op.x_quantized;
  const int64_t g = op.group;
  const int64_t cols = op.columns - n0 < kPanelColumns ? op.columns - n0 : kPanelColumns;
  Reg acc[ROWS][kR];
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    if (span.first == 0) {
#pragma GCC unroll 16
      for (int c = 0; c < kR; ++c) {
        acc[r][c] = Q::zero();
      }
    } else {
      alignas(64) float partial[kPanelColumns] = {};
      const float* out = op.out + (m0 + r) * op.columns + n0;
      for (int64_t j = 0; j < cols; ++j) {
        partial[j] = out[j];
      }
#pragma GCC unroll 16
      for (int c = 0; c < kR; ++c) {
        acc[r][c] = Q::load(tiles::F32{}, partial + c * Q::kWidth);
      }
    }
  }
  for (int64_t gi = span.first; gi < span.last; ++gi) {
    const uint8_t* group_start = span.base + (gi - span.first) * span.stride;
    const uint8_t* codes = group_start + kScaleBytes;
    IReg ia[ROWS][kR];
#pragma GCC unroll 16
    for (int r = 0; r < ROWS; ++r) {
#pragma GCC unroll 16
      for (int c = 0; c < kR; ++c) {
        ia[r][c] = Q::izero();
      }
    }
    if (ahead) {
      tiles::prefetch_lines<kScaleBytes>(reinterpret_cast<const char*>(group_start) + tiles::kGemvPrefetchBytes);
    }
    if constexpr (PACKED) {
      for (int64_t j = 0; j < g / 8; ++j) {
        const uint8_t* row = codes + j * kWordRowBytes;
        if (ahead) {
          tiles::prefetch_lines<kWordRowBytes>(reinterpret_cast<const char*>(row) + tiles::kGemvPrefetchBytes);
        }
        IReg lo[kR];
        IReg hi[kR];
#pragma GCC unroll 16
        for (int c = 0; c < kR; ++c) {
          const IReg w = Q::iload(row + c * Q::kWidth * 4);
          lo[c] = Q::low_nibbles(w);
          hi[c] = Q::high_nibbles(w);
        }
#pragma GCC unroll 16
        for (int r = 0; r < ROWS; ++r) {
          const int32_t* xw = xq.words(m0 + r) + gi * g / 4 + 2 * j;
          const typename Q::XWord lo_x = Q::xword(xw[0]);
          const typename Q::XWord hi_x = Q::xword(xw[1]);
#pragma GCC unroll 16
          for (int c = 0; c < kR; ++c) {
            ia[r][c] = Q::dot4_small(ia[r][c], lo[c], lo_x);
            ia[r][c] = Q::dot4_small(ia[r][c], hi[c], hi_x);
          }
        }
      }
    } else {
      for (int64_t s = 0; s < g / 4; ++s) {
        const uint8_t* row = codes + s * kWordRowBytes;
        if (ahead) {
          tiles::prefetch_lines<kWordRowBytes>(reinterpret_cast<const char*>(row) + tiles::kGemvPrefetchBytes);
        }
        IReg w[kR];
#pragma GCC unroll 16
        for (int c = 0; c < kR; ++c) {
          w[c] = Q::iload(row + c * Q::kWidth * 4);
        }
#pragma GCC unroll 16
        for (int r = 0; r < ROWS; ++r) {
          const typename Q::XWord x = Q::xword(xq.words(m0 + r)[gi * g / 4 + s]);
#pragma GCC unroll 16
          for (int c = 0; c < kR; ++c) {
            ia[r][c] = SMALL ? Q::dot4_small(ia[r][c], w[c], x) : Q::dot4(ia[r][c], w[c], x);
          }
        }
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < ROWS; ++r) {
      scale_group<Q>(acc[r], ia[r], group_start, span.offset * xq.row_sums(m0 + r)[gi], xq.row_scales(m0 + r)[gi]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    tiles::store_panel<Q>(op, acc[r], op.out + (m0 + r) * op.columns, n0);
  }
}

// Rows [m, rows), fewer than Q::kQuantRows, as one block of exactly that many.
template <class Q, bool SMALL, bool PACKED, int ROWS = 1>
void gemm_tail(const LinearOperands& op, const GroupSpan& span, int64_t m, int64_t n0, bool ahead) {
  if constexpr (ROWS < Q::kQuantRows) {
    if (op.rows - m == ROWS) {
      gemm_rows<Q, ROWS, SMALL, PACKED>(op, span, m, n0, ahead);
    } else {
      gemm_tail<Q, SMALL, PACKED, ROWS + 1>(op, span, m, n0, ahead);
    }
  }
}

// Every row of the chunk over a span, in blocks of Q::kQuantRows; with `stream`, the first block
// of rows asks for the span's lines ahead of its loads.
template <class Q, bool SMALL, bool PACKED = false>
void gemm_span(const LinearOperands& op, const GroupSpan& span, int64_t n0, bool stream = false) {
  int64_t m = 0;
  for (; m + Q::kQuantRows <= op.rows; m += Q::kQuantRows) {
    gemm_rows<Q, Q::kQuantRows, SMALL, PACKED>(op, span, m, n0, stream && m == 0);
  }
  gemm_tail<Q, SMALL, PACKED>(op, span, m, n0, stream && m == 0);
}

// The most rows of a call that reads its panels as a stream, int4 as stored (gemm_panel): a short
// prompt's linears are bound by reading the weights, which the chunk path did with no requests
// ahead of the loads and int4 unpacked in a pass of its own. From 64 rows on the two could not be
// told apart, and the chunk path stays (`staticlm bench -p 8` / `-p 32` / `-p 64`, int8 and int4).
inline constexpr int64_t kStreamedQuantRows = 32;
// The most blocks of rows that split int4 nibbles as stored, each its own: past that, unpacking
// once beats every block splitting them again (AVX2's blocks of one row: `staticlm bench -p 8`
// against `-p 32` on an int4 program).
inline constexpr int64_t kPackedRowBlocks = 8;

// The buffer int4 groups are unpacked into (unpack_int4): all of the linear scratch, 32 KiB, the
// span size the int4 GEMM was measured with; the bytes of one group unpacked, and how many
// groups the buffer holds.
inline constexpr int64_t kUnpackScratchBytes = 32 * 1024;
static_assert(kUnpackScratchBytes <= kLinearScratchFloats * static_cast<int64_t>(sizeof(float)));
inline int64_t unpacked_group_bytes(const LinearOperands& op) {
  return kScaleBytes + kPanelColumns * op.group;
}
inline int64_t unpack_span_groups(const LinearOperands& op) {
  return kUnpackScratchBytes / unpacked_group_bytes(op);
}

// Groups [first, last) of int4 panel `panel` unpacked into `scratch` as int8 codes with offset 8,
// in the int8 layout (scales, then word rows in k order); returns them as a span. Word row j of
// a packed group holds the int8 word rows 2j (low nibbles) and 2j + 1 (high ones). The packed
// lines are asked for ahead of the loads, as the GEMV asks: they come from memory.
template <class Q>
GroupSpan unpack_int4(const LinearOperands& op, const uint8_t* panel, int64_t first, int64_t last, uint8_t* scratch) {
  const int64_t gbytes = group_bytes(op);
  const int64_t unpacked_bytes = unpacked_group_bytes(op);
  for (int64_t gi = first; gi < last; ++gi) {
    const uint8_t* packed = panel + gi * gbytes;
    uint8_t* unpacked = scratch + (gi - first) * unpacked_bytes;
    for (int64_t b = 0; b < kScaleBytes; ++b) {
      unpacked[b] = packed[b];
    }
    tiles::prefetch_lines<kScaleBytes>(reinterpret_cast<const char*>(packed) + tiles::kGemvPrefetchBytes);
    for (int64_t j = 0; j < op.group / 8; ++j) {
      tiles::prefetch_lines<kWordRowBytes>(reinterpret_cast<const char*>(packed + kScaleBytes + j * kWordRowBytes) +
                                           tiles::kGemvPrefetchBytes);
#pragma GCC unroll 16
      for (int c = 0; c < kRegs<Q>; ++c) {
        const typename Q::IReg w = Q::iload(packed + kScaleBytes + j * kWordRowBytes + c * Q::kWidth * 4);
        Q::istore(unpacked + kScaleBytes + 2 * j * kWordRowBytes + c * Q::kWidth * 4, Q::low_nibbles(w));
        Q::istore(unpacked + kScaleBytes + (2 * j + 1) * kWordRowBytes + c * Q::kWidth * 4, Q::high_nibbles(w));
      }
    }
  }
  return {scratch, unpacked_bytes, first, last, code_offset(PanelCodes::kInt4)};
}

// A chunk of rows over panel p, in spans of groups: int8 groups where they lie; int4 groups
// unpacked once per span into `scratch` (unpack_int4) as int8 codes with offset 8, which every
// block of rows then reads. A call of a few rows reads the panel in one span as stored, its first
// block of rows asking for lines ahead as the GEMV does (the later ones find them in cache).
template <class Q>
void gemm_panel(const LinearOperands& op, int64_t p, uint8_t* scratch) {
  const int64_t gbytes = group_bytes(op);
  const uint8_t* panel = static_cast<const uint8_t*>(op.weight) + p * op.panel_elements;
  const int64_t groups = op.x_quantized->groups;
  const int64_t n0 = p * kPanelColumns;
  const bool int4 = op.codes == PanelCodes::kInt4;
  if (op.rows <= kStreamedQuantRows && (!int4 || op.rows <= kPackedRowBlocks * Q::kQuantRows)) {
    const GroupSpan whole{panel, gbytes, 0, groups, dot_offset<Q>(op.codes)};
    if (int4) {
      gemm_span<Q, true, true>(op, whole, n0, true);
    } else {
      gemm_span<Q, false>(op, whole, n0, true);
    }
    return;
  }
  const int64_t per_span = int4 ? unpack_span_groups(op) : groups;
  for (int64_t first = 0; first < groups; first += per_span) {
    const int64_t last = first + per_span < groups ? first + per_span : groups;
    if (int4) {
      gemm_span<Q, true>(op, unpack_int4<Q>(op, panel, first, last, scratch), n0);
    } else {
      gemm_span<Q, false>(op, {panel + first * gbytes, gbytes, first, last, dot_offset<Q>(PanelCodes::kInt8)}, n0);
    }
  }
}

template <class Q>
void quantized_columns(const LinearOperands& op, int64_t n_begin, int64_t n_end, float* scratch) {
  const int64_t p_end = (n_end + kPanelColumns - 1) / kPanelColumns;
  int64_t p = n_begin / kPanelColumns;
  if (op.rows == 1) {
    for (; p + 2 <= p_end; p += 2) {
      gemv_panels<Q, 2>(op, p);
    }
  }
  for (; p < p_end; ++p) {
    if (op.rows == 1) {
      gemv_panels<Q, 1>(op, p);
    } else {
      gemm_panel<Q>(op, p, reinterpret_cast<uint8_t*>(scratch));
    }
  }
}

}  // namespace staticlm::cpu::qtiles
