// SPDX-License-Identifier: Apache-2.0
// The linear kernels over weights packed at export in the panel32 layout (ops/weight_layout.h),
// written once over an instruction-set traits type V and instantiated by each ISA file after its
// target pragma (x86/linear_avx512.cpp, x86/linear_avx2.cpp), so each copy is compiled for its
// own set. Include it only there, after the pragma and inside no namespace.
//
// V provides: Reg, kWidth (floats per Reg), kPanelRows (rows of the GEMM micro-kernel over one
// panel), kPanelPasses (how many passes over a panel's columns that micro-kernel makes), kPairRows
// (rows of the one over two panels at once; 0: too few registers), kPanelStep (k values per
// step of the GEMM's loop), zero(),
// fma(a, b, c) = a * b + c, add(a, b), broadcast(p) (*p in every lane), store(p, r), load(T{}, p)
// for T in F32 / F16 / Bf16 (kWidth elements widened to f32), and pair_lo(p) / pair_hi(p) (the
// even / odd bf16 of kWidth consecutive 32-bit pairs, widened). Loops over registers carry
// `#pragma GCC unroll`: at -O2 g++ would otherwise keep the accumulators in memory. It includes
// only declarations: anything inline defined after the pragma would be compiled for the ISA and
// could be merged into callers that run anywhere.
#pragma once

#include <cstdint>

#include "staticlm/backends/cpu/kernels/linear_columns.h"
#include "staticlm/backends/cpu/kernels/simd_tags.h"

namespace staticlm::cpu::tiles {

// Registers per 32-column step of a panel.
template <class V>
inline constexpr int kPanelRegs = static_cast<int>(kPanelColumns) / V::kWidth;

template <class T>
const typename T::Elem* panel_data(const LinearOperands& op, int64_t panel) {
  return static_cast<const typename T::Elem*>(op.weight) + panel * op.panel_elements;
}

// Writes the 32 sums of one panel (acc[c], kPanelRegs registers) to out[n0, n0 + 32), the
// columns past the last one dropped.
template <class V>
void store_panel(const LinearOperands& op, const typename V::Reg* acc, float* out, int64_t n0) {
  const int64_t cols = op.columns - n0 < kPanelColumns ? op.columns - n0 : kPanelColumns;
  if (cols == kPanelColumns) {
#pragma GCC unroll 16
    for (int c = 0; c < kPanelRegs<V>; ++c) {
      V::store(out + n0 + c * V::kWidth, acc[c]);
    }
    return;
  }
  alignas(64) float partial[kPanelColumns];
#pragma GCC unroll 16
  for (int c = 0; c < kPanelRegs<V>; ++c) {
    V::store(partial + c * V::kWidth, acc[c]);
  }
  for (int64_t j = 0; j < cols; ++j) {
    out[n0 + j] = partial[j];
  }
}

// How far ahead of its loads the GEMV asks for weight lines: a core's stream is bound by the
// misses it has in flight, and these requests add to the hardware prefetchers'. 1-4 KiB read
// alike, 8 KiB and more slower (`staticlm bench`'s decode, linear_bench gemv_*).
inline constexpr int64_t kGemvPrefetchBytes = 2048;

// Asks for the BYTES bytes at p, a 64-byte line at a time. Past the panel's end it reaches into
// the next panel, which the same thread usually streams next; a line past the matrix is only
// a wasted request (prefetches never fault).
template <size_t BYTES>
inline void prefetch_lines(const char* p) {
#pragma GCC unroll 16
  for (size_t line = 0; line < BYTES; line += 64) {
    __builtin_prefetch(p + line, 0, 3);
  }
}

// Decode (one row of x) over PANELS adjacent panels from p: each panel is one contiguous stream,
// read in memory order; per k, one broadcast x value times the 32 weights of that k in each panel.
// A thread reads STREAMS panels at once (fewer where its range ends): one stream per thread reads
// memory slower than several, and the best count differs by CPU (x86/linear_avx512.cpp chooses;
// linear_bench gemv_* shows it). kSteps k values are in flight at once (at least eight
// accumulators with two streams) to hide the multiply-add latency. A panel has its own
// accumulators and the same kSteps whether it goes alone or beside others, so its sums come out
// the same however the columns are split over threads.
template <class V, class T, int PANELS, int STREAMS>
void gemv_panels(const LinearOperands& op, int64_t p) {
  constexpr int kRegs = kPanelRegs<V>;
  constexpr int kSteps = 8 / (kRegs * STREAMS) > 0 ? 8 / (kRegs * STREAMS) : 1;
  using Reg = typename V::Reg;
  const typename T::Elem* w[PANELS];
  Reg acc[PANELS][kSteps][kRegs];
#pragma GCC unroll 16
  for (int i = 0; i < PANELS; ++i) {
    w[i] = panel_data<T>(op, p + i);
#pragma GCC unroll 16
    for (int s = 0; s < kSteps; ++s) {
#pragma GCC unroll 16
      for (int c = 0; c < kRegs; ++c) {
        acc[i][s][c] = V::zero();
      }
    }
  }
  const float* x = op.x;
  const int64_t inner = op.inner;
  int64_t k = 0;
  if constexpr (T::kGroup == 1) {
    constexpr size_t kStepBytes = kPanelColumns * sizeof(typename T::Elem);
    for (; k + kSteps <= inner; k += kSteps) {
#pragma GCC unroll 16
      for (int i = 0; i < PANELS; ++i) {
        prefetch_lines<kSteps * kStepBytes>(reinterpret_cast<const char*>(w[i]) + kGemvPrefetchBytes + k * kStepBytes);
      }
#pragma GCC unroll 16
      for (int s = 0; s < kSteps; ++s) {
        const Reg b = V::broadcast(x + k + s);
#pragma GCC unroll 16
        for (int i = 0; i < PANELS; ++i) {
#pragma GCC unroll 16
          for (int c = 0; c < kRegs; ++c) {
            acc[i][s][c] = V::fma(b, V::load(T{}, w[i] + (k + s) * kPanelColumns + c * V::kWidth), acc[i][s][c]);
          }
        }
      }
    }
    for (; k < inner; ++k) {
      const Reg b = V::broadcast(x + k);
#pragma GCC unroll 16
      for (int i = 0; i < PANELS; ++i) {
#pragma GCC unroll 16
        for (int c = 0; c < kRegs; ++c) {
          acc[i][0][c] = V::fma(b, V::load(T{}, w[i] + k * kPanelColumns + c * V::kWidth), acc[i][0][c]);
        }
      }
    }
  } else {
    // bf16 pairs: word g * 32 + j holds k = 2g (low half) and 2g + 1 (high half) of column j.
    constexpr int kPairs = kSteps / 2 > 0 ? kSteps / 2 : 1;
    constexpr size_t kLineBytes = kPanelColumns * sizeof(uint32_t);
    for (; k + 2 * kPairs <= inner; k += 2 * kPairs) {
#pragma GCC unroll 16
      for (int i = 0; i < PANELS; ++i) {
        prefetch_lines<kPairs * kLineBytes>(reinterpret_cast<const char*>(w[i]) + kGemvPrefetchBytes +
                                            k / 2 * kLineBytes);
      }
#pragma GCC unroll 16
      for (int s = 0; s < kPairs; ++s) {
        const Reg lo = V::broadcast(x + k + 2 * s);
        const Reg hi = V::broadcast(x + k + 2 * s + 1);
#pragma GCC unroll 16
        for (int i = 0; i < PANELS; ++i) {
          const uint32_t* line = reinterpret_cast<const uint32_t*>(w[i]) + (k / 2 + s) * kPanelColumns;
#pragma GCC unroll 16
          for (int c = 0; c < kRegs; ++c) {
            acc[i][2 * s % kSteps][c] = V::fma(lo, V::pair_lo(line + c * V::kWidth), acc[i][2 * s % kSteps][c]);
            acc[i][(2 * s + 1) % kSteps][c] =
                V::fma(hi, V::pair_hi(line + c * V::kWidth), acc[i][(2 * s + 1) % kSteps][c]);
          }
        }
      }
    }
    for (; k < inner; k += 2) {
      const Reg lo = V::broadcast(x + k);
#pragma GCC unroll 16
      for (int i = 0; i < PANELS; ++i) {
        const uint32_t* line = reinterpret_cast<const uint32_t*>(w[i]) + (k / 2) * kPanelColumns;
#pragma GCC unroll 16
        for (int c = 0; c < kRegs; ++c) {
          acc[i][0][c] = V::fma(lo, V::pair_lo(line + c * V::kWidth), acc[i][0][c]);
        }
      }
      if (k + 1 < inner) {  // an odd K's last pair has a zero high half and no x beside it
        const Reg hi = V::broadcast(x + k + 1);
#pragma GCC unroll 16
        for (int i = 0; i < PANELS; ++i) {
          const uint32_t* line = reinterpret_cast<const uint32_t*>(w[i]) + (k / 2) * kPanelColumns;
#pragma GCC unroll 16
          for (int c = 0; c < kRegs; ++c) {
            acc[i][0][c] = V::fma(hi, V::pair_hi(line + c * V::kWidth), acc[i][0][c]);
          }
        }
      }
    }
  }
  // Summed into a fresh array: were acc's address taken, g++ would store every accumulator to
  // memory on each step.
#pragma GCC unroll 16
  for (int i = 0; i < PANELS; ++i) {
    Reg total[kRegs];
#pragma GCC unroll 16
    for (int c = 0; c < kRegs; ++c) {
      total[c] = acc[i][0][c];
#pragma GCC unroll 16
      for (int s = 1; s < kSteps; ++s) {
        total[c] = V::add(total[c], acc[i][s][c]);
      }
    }
    store_panel<V>(op, total, op.out, (p + i) * kPanelColumns);
  }
}

// The GEMM's block of panel p at k values [k0, k0 + kb), as [kb][32] f32: f32 weights are read
// in place; f16 and bf16 are widened into `scratch` (kb x 32 floats), once per block and reused
// by every row of the chunk.
template <class V, class T>
const float* f32_block(const LinearOperands& op, int64_t p, int64_t k0, int64_t kb, float* scratch) {
  const typename T::Elem* w = panel_data<T>(op, p);
  if constexpr (T::kGroup == 1) {
    if constexpr (sizeof(typename T::Elem) == sizeof(float)) {
      return reinterpret_cast<const float*>(w) + k0 * kPanelColumns;
    } else {
      const typename T::Elem* src = w + k0 * kPanelColumns;
      for (int64_t i = 0; i < kb * kPanelColumns; i += V::kWidth) {
        V::store(scratch + i, V::load(T{}, src + i));
      }
      return scratch;
    }
  } else {
    // k0 is even (a multiple of the block), so the block starts on a whole pair.
    const uint32_t* words = reinterpret_cast<const uint32_t*>(w) + (k0 / 2) * kPanelColumns;
    for (int64_t q = 0; 2 * q < kb; ++q) {
#pragma GCC unroll 16
      for (int c = 0; c < kPanelRegs<V>; ++c) {
        V::store(scratch + 2 * q * kPanelColumns + c * V::kWidth,
                 V::pair_lo(words + q * kPanelColumns + c * V::kWidth));
      }
      if (2 * q + 1 < kb) {
#pragma GCC unroll 16
        for (int c = 0; c < kPanelRegs<V>; ++c) {
          V::store(scratch + (2 * q + 1) * kPanelColumns + c * V::kWidth,
                   V::pair_hi(words + q * kPanelColumns + c * V::kWidth));
        }
      }
    }
    return scratch;
  }
}

// Weight lines the GEMM asks for while a block of rows runs: `lines` lines from `from` of each of
// the PANELS streams at `stream`.
template <int PANELS>
struct BlockPrefetch {
  const char* stream[PANELS] = {};
  int64_t from = 0;
  int64_t lines = 0;
};

// One prefetch per panel every kPrefetchEvery k steps of the micro-kernel: spread out, as a burst
// of them at the start of a block of rows stalls on the core's fill buffers (a profile of
// linear_bench gemm_* shows the time in the prefetch instructions themselves). A block of rows
// with more lines than that covers (a chunk of a few rows has one or two blocks for the whole
// next K block) asks for as many per step as spreads them over its steps.
inline constexpr int64_t kPrefetchEvery = 4;

// Asks for `count` lines of each stream from line `first` of the block's requests (none past
// its last). V only ties the copy to its ISA file (see the top of this file). Always inlined:
// the same loop as a shared lambda, called rather than inlined, slowed short prefills
// (`staticlm bench -p 8`).
template <class V, int PANELS>
[[gnu::always_inline]] inline void request_lines(const BlockPrefetch<PANELS>& prefetch, int64_t first, int64_t count) {
  for (int64_t line = first; line < first + count && line < prefetch.lines; ++line) {
#pragma GCC unroll 4
    for (int i = 0; i < PANELS; ++i) {
      __builtin_prefetch(prefetch.stream[i] + (prefetch.from + line) * 64, 0, 3);
    }
  }
}

// One k of panel_rows' micro-kernel: the kRegs weight registers at k (columns from c0), times
// one broadcast x value per row.
template <class V, int ROWS, int kRegs, class E>
[[gnu::always_inline]] inline void panel_step(typename V::Reg (&acc)[ROWS][kRegs],
                                              const typename E::Elem* const* blocks, const float* const (&x)[ROWS],
                                              int64_t c0, int64_t k) {
  typename V::Reg w[kRegs];
#pragma GCC unroll 16
  for (int c = 0; c < kRegs; ++c) {
    const int64_t column = c0 + c * V::kWidth;
    if constexpr (E::kGroup == 1) {
      w[c] = V::load(E{}, blocks[column / kPanelColumns] + k * kPanelColumns + column % kPanelColumns);
    } else {  // bf16 pairs read in place: word g * 32 + j holds k = 2g and 2g + 1 of column j
      const uint32_t* words = reinterpret_cast<const uint32_t*>(blocks[column / kPanelColumns]) +
                              k / 2 * kPanelColumns + column % kPanelColumns;
      w[c] = k % 2 == 0 ? V::pair_lo(words) : V::pair_hi(words);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    const typename V::Reg b = V::broadcast(x[r] + k);
#pragma GCC unroll 16
    for (int c = 0; c < kRegs; ++c) {
      acc[r][c] = V::fma(b, w[c], acc[r][c]);
    }
  }
}

// ROWS rows of x against PANELS adjacent [kb][32] f32 blocks: per k, the blocks' registers (32
// columns each) and one broadcast x value per row feed ROWS x PANELS x kPanelRegs accumulators,
// with no horizontal sums. Two panels at once give each broadcast twice the multiply-adds, which
// brings the kernel nearer the FMA peak even with every operand in L1 (linear_bench gemm_*, the
// 126 x 128 x 64 case). A single panel may go in V::kPanelPasses passes over its
// columns, each with its own accumulators: AVX2's 16 registers hold 2 rows x 32 columns but
// 6 rows x 16, whose 12 accumulators hide the multiply-add latency and whose 8 loads per 12
// multiply-adds leave the load ports room (linear_bench gemm_f32_avx2).
// Partial sums of earlier K blocks are read back from `out`. Only a single panel may be partial
// (fewer than 32 columns).
template <class V, int ROWS, int PANELS, class E = F32>
void panel_rows(const LinearOperands& op, const typename E::Elem* const* blocks, int64_t m0, int64_t n0, int64_t k0,
                int64_t kb, const BlockPrefetch<PANELS>& prefetch = {}) {
  constexpr int kPasses = PANELS == 1 ? V::kPanelPasses : 1;
  constexpr int kRegs = PANELS * kPanelRegs<V> / kPasses;
  constexpr int64_t kColumns = PANELS * kPanelColumns;
  const int64_t cols = op.columns - n0 < kColumns ? op.columns - n0 : kColumns;
  const bool full = cols == kColumns;
  // A partial panel's rows go through a zero-padded copy, so every pass reads and writes whole
  // registers.
  alignas(64) float partial[ROWS][kColumns];
  float* rows[ROWS];
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    rows[r] = op.out + (m0 + r) * op.columns + n0;
    if (!full) {
      for (int64_t j = 0; j < kColumns; ++j) {
        partial[r][j] = k0 > 0 && j < cols ? rows[r][j] : 0.0f;
      }
      rows[r] = partial[r];
    }
  }
  const float* x[ROWS];
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    x[r] = op.x + (m0 + r) * op.inner + k0;
  }
  const int64_t steps = kPasses * kb;
  const int64_t per_step = prefetch.lines > steps / kPrefetchEvery ? (prefetch.lines + steps - 1) / steps : 0;
  for (int pass = 0; pass < kPasses; ++pass) {
    const int64_t c0 = pass * kRegs * V::kWidth;
    typename V::Reg acc[ROWS][kRegs];
#pragma GCC unroll 16
    for (int r = 0; r < ROWS; ++r) {
#pragma GCC unroll 16
      for (int c = 0; c < kRegs; ++c) {
        acc[r][c] = k0 == 0 ? V::zero() : V::load(F32{}, rows[r] + c0 + c * V::kWidth);
      }
    }
    // V::kPanelStep k values a step: with a step per k, the loop's bookkeeping and the branches
    // around the requests (about a dozen scalar instructions beside 24 multiply-adds) ran every
    // k. AVX-512 takes two k a step (with four its registers spill); AVX2's 16 registers spill
    // already at two, so it keeps one (bench/tiles_ab.py compares the step sizes).
    //
    // With per_step 0 a request goes every kPrefetchEvery k, and the passes share the block's
    // lines: pass p asks for every kPasses-th.
    constexpr int kStep = V::kPanelStep;
    static_assert(kPrefetchEvery % kStep == 0 || kStep % kPrefetchEvery == 0);
    int64_t k = 0;
    for (; k + kStep <= kb; k += kStep) {
      if (per_step == 0 && k % kPrefetchEvery == 0) {
        request_lines<V>(prefetch, k / kPrefetchEvery * kPasses + pass, 1);
      }
#pragma GCC unroll 4
      for (int j = 0; j < kStep; ++j) {
        request_lines<V>(prefetch, (pass * kb + k + j) * per_step, per_step);
        panel_step<V, ROWS, kRegs, E>(acc, blocks, x, c0, k + j);
      }
    }
    for (; k < kb; ++k) {
      if (per_step == 0 && k % kPrefetchEvery == 0) {
        request_lines<V>(prefetch, k / kPrefetchEvery * kPasses + pass, 1);
      }
      request_lines<V>(prefetch, (pass * kb + k) * per_step, per_step);
      panel_step<V, ROWS, kRegs, E>(acc, blocks, x, c0, k);
    }
#pragma GCC unroll 16
    for (int r = 0; r < ROWS; ++r) {
#pragma GCC unroll 16
      for (int c = 0; c < kRegs; ++c) {
        V::store(rows[r] + c0 + c * V::kWidth, acc[r][c]);
      }
    }
  }
  if (!full) {
    for (int r = 0; r < ROWS; ++r) {
      float* out = op.out + (m0 + r) * op.columns + n0;
      for (int64_t j = 0; j < cols; ++j) {
        out[j] = partial[r][j];
      }
    }
  }
}

// Rows of the micro-kernel over PANELS panels.
template <class V, int PANELS>
inline constexpr int kBlockRows = PANELS == 1 ? V::kPanelRows : V::kPairRows;

// How many blocks of one row fewer the rows start with, so that blocks of both sizes cover them
// exactly: from 20 rows on (AVX-512) any count. The one row fewer runs at the full block's rate,
// where a remainder block (a 128-row chunk in blocks of 6 left 2 rows) loads the same weights
// for a third of the multiply-adds (linear_bench gemm_*). 0 where the rows are a multiple of the
// block, too few, or the block is too small to shrink.
template <class V, int PANELS>
int64_t short_blocks(int64_t rows) {
  constexpr int kRows = kBlockRows<V, PANELS>;
  if constexpr (kRows < 3) {
    return 0;
  } else {
    const int64_t count = (kRows - rows % kRows) % kRows;  // each short block takes one row off
    return count * (kRows - 1) <= rows ? count : 0;
  }
}

// Rows [m, rows), fewer than a block, in one block of exactly that many: row by row, each would
// reread the whole block.
template <class V, int PANELS, class E = F32, int ROWS = 1>
void panel_tail(const LinearOperands& op, const typename E::Elem* const* blocks, int64_t m, int64_t n0, int64_t k0,
                int64_t kb, const BlockPrefetch<PANELS>& prefetch) {
  if constexpr (ROWS < kBlockRows<V, PANELS>) {
    if (op.rows - m == ROWS) {
      panel_rows<V, ROWS, PANELS, E>(op, blocks, m, n0, k0, kb, prefetch);
    } else {
      panel_tail<V, PANELS, E, ROWS + 1>(op, blocks, m, n0, k0, kb, prefetch);
    }
  }
}

// The most rows of a call whose panels are read as a stream (streamed_block; the 16-bit bound
// for f16 and bf16 pairs): up to there reading the weights bounds the call more than its
// multiply-adds do. 16-bit weights stop sooner: each block of rows widens the panels again.
// linear_bench few_rows_* times both sides of each bound.
inline constexpr int64_t kStreamedRowsF32 = 32;
inline constexpr int64_t kStreamedRowsF16 = 16;

// A K block of a call of a few rows over PANELS panels, read in place (f16 and bf16 widened in
// registers by each block of rows): the first block of rows asks for the panels' lines
// kGemvPrefetchBytes ahead of its loads, as the GEMV does, and the later ones find them in
// cache. The next K block asked for whole while a chunk's blocks of rows run (gemm_panels), a
// call of one or two blocks of rows bunched those requests, and the block it stood on left L1
// before its second block of rows read it; 16-bit weights had a pass of their own widening every
// block.
template <class V, class T, int PANELS>
void streamed_block(const LinearOperands& op, int64_t p, int64_t k0, int64_t kb) {
  constexpr int kRows = kBlockRows<V, PANELS>;
  const int64_t n0 = p * kPanelColumns;
  const typename T::Elem* block[PANELS];
  BlockPrefetch<PANELS> ahead;
  for (int i = 0; i < PANELS; ++i) {
    block[i] = panel_data<T>(op, p + i) + k0 * kPanelColumns;
    ahead.stream[i] = reinterpret_cast<const char*>(block[i]) + kGemvPrefetchBytes;
  }
  ahead.lines = (kb * kPanelColumns * static_cast<int64_t>(sizeof(typename T::Elem)) + 63) / 64;
  const BlockPrefetch<PANELS> none;
  int64_t m = 0;
  for (; m + kRows <= op.rows; m += kRows) {
    panel_rows<V, kRows, PANELS, T>(op, block, m, n0, k0, kb, m == 0 ? ahead : none);
  }
  panel_tail<V, PANELS, T>(op, block, m, n0, k0, kb, m == 0 ? ahead : none);
}

// One K block, k values [k0, k0 + kb), of a chunk's GEMM over PANELS panels from p: every block
// of rows runs the micro-kernel over the panels' blocks (16-bit ones widened into `scratch`, one
// kPanelColumns x kPackedInnerBlock area per panel), asking meanwhile for the weight lines of the
// block the call runs next: PANELS panels from next_p at next_k.
template <class V, class T, int PANELS>
void gemm_block(const LinearOperands& op, int64_t p, int64_t k0, int64_t kb, int64_t next_p, int64_t next_k,
                float* scratch) {
  constexpr int kRows = kBlockRows<V, PANELS>;
  const int64_t n0 = p * kPanelColumns;
  const float* blocks[PANELS];
  for (int i = 0; i < PANELS; ++i) {
    blocks[i] = f32_block<V, T>(op, p + i, k0, kb, scratch + i * kPanelColumns * kPackedInnerBlock);
  }
  // The next block's weights, a slice per block of rows, so they are in cache when its first
  // block of rows needs them. Without it that block of rows waits on memory wherever the weights
  // do not sit in L3 (linear_bench gemm_*: Llama-3.2-1B's shapes against SmolLM's). Past the
  // matrix the requests are wasted, never faults.
  constexpr int64_t kElemBytes = sizeof(typename T::Elem);
  const int64_t next_kb = op.inner - next_k < kPackedInnerBlock ? op.inner - next_k : kPackedInnerBlock;
  const int64_t next_lines = (next_kb * kPanelColumns * kElemBytes + 63) / 64;
  const int64_t short_count = short_blocks<V, PANELS>(op.rows);
  const int64_t blocks_of_rows = short_count + (op.rows - short_count * (kRows - 1)) / kRows;
  const int64_t per_block = (next_lines + blocks_of_rows - 1) / (blocks_of_rows > 0 ? blocks_of_rows : 1);
  BlockPrefetch<PANELS> prefetch;
  for (int i = 0; i < PANELS; ++i) {
    prefetch.stream[i] =
        reinterpret_cast<const char*>(panel_data<T>(op, next_p + i)) + next_k * kPanelColumns * kElemBytes;
  }
  int64_t m = 0;
  if constexpr (kRows >= 3) {
    for (int64_t b = 0; b < short_count; ++b, m += kRows - 1) {
      prefetch.lines = next_lines - prefetch.from < per_block ? next_lines - prefetch.from : per_block;
      panel_rows<V, kRows - 1, PANELS>(op, blocks, m, n0, k0, kb, prefetch);
      prefetch.from += prefetch.lines;
    }
  }
  for (; m + kRows <= op.rows; m += kRows) {
    prefetch.lines = next_lines - prefetch.from < per_block ? next_lines - prefetch.from : per_block;
    panel_rows<V, kRows, PANELS>(op, blocks, m, n0, k0, kb, prefetch);
    prefetch.from += prefetch.lines;
  }
  prefetch.lines = next_lines - prefetch.from;  // what the full blocks left (all: fewer rows than a block)
  panel_tail<V, PANELS>(op, blocks, m, n0, k0, kb, prefetch);
}

// Whether a call of op's rows streams its panels (streamed_block) instead of running the chunk
// GEMM: f32 and bf16 pairs (128-byte rows) stream only through a micro-kernel of one pass; in
// AVX2's two passes of 16 columns, the first reads every other line of a block, ahead of what the
// stream's requests cover (streamed so, f32 on AVX2 is slower at linear_bench's few-row shapes).
template <class V, class T, int PANELS>
inline constexpr bool kStreams =
    (T::kGroup == 1 && sizeof(typename T::Elem) < sizeof(float)) || PANELS > 1 || V::kPanelPasses == 1;

template <class V, class T, int PANELS>
bool streams_rows(const LinearOperands& op) {
  return kStreams<V, T, PANELS> &&
         op.rows <= (sizeof(typename T::Elem) == sizeof(float) ? kStreamedRowsF32 : kStreamedRowsF16);
}

// Prefill (several rows of x): PANELS panels from p on, K block by K block, or (a call of a few
// rows) streamed.
template <class V, class T, int PANELS>
void gemm_panels(const LinearOperands& op, int64_t p, float* scratch) {
  const bool streamed = streams_rows<V, T, PANELS>(op);
  for (int64_t k0 = 0; k0 < op.inner; k0 += kPackedInnerBlock) {
    const int64_t kb = op.inner - k0 < kPackedInnerBlock ? op.inner - k0 : kPackedInnerBlock;
    if constexpr (kStreams<V, T, PANELS>) {  // no streamed_block where it never streams
      if (streamed) {
        streamed_block<V, T, PANELS>(op, p, k0, kb);
        continue;
      }
    }
    // After the last K block, the next panels' first.
    const bool last = k0 + kb >= op.inner;
    gemm_block<V, T, PANELS>(op, p, k0, kb, last ? p + PANELS : p, last ? 0 : k0 + kb, scratch);
  }
}

// Panel pairs a chunk's GEMM takes K block by K block together where x is larger than an L2
// (gemm_pairs).
inline constexpr int64_t kGroupPairs = 4;
inline constexpr int64_t kGroupedXBytes = int64_t{2} << 20;

// The chunk GEMM over the panel pairs from p to p_end (an even count of panels). Where x is
// larger than kGroupedXBytes, in groups of kGroupPairs pairs run K block by K block across the
// group: each K block of x (the chunk's rows by 128 k values) is then read into cache once per
// group instead of once per pair, and the group's partial sums (rows x 256 columns) stay in L2.
// Pair by pair, Llama-3.2-1B's down_proj (K 8192: x is 4 MiB, past a 2 MiB L2) rereads all of x
// from L3 for every pair (`staticlm bench --ops`: its linear_add against the swiglu_linear of the
// same prefill). Where x fits, pair by pair is a little faster (bench/tiles_ab.py), so smaller
// calls keep that order.
template <class V, class T>
void gemm_pairs(const LinearOperands& op, int64_t p, int64_t p_end, float* scratch) {
  const int64_t group = op.rows * op.inner * static_cast<int64_t>(sizeof(float)) > kGroupedXBytes ? 2 * kGroupPairs : 2;
  for (int64_t first = p; first < p_end; first += group) {
    const int64_t end = p_end - first < group ? p_end : first + group;
    for (int64_t k0 = 0; k0 < op.inner; k0 += kPackedInnerBlock) {
      const int64_t kb = op.inner - k0 < kPackedInnerBlock ? op.inner - k0 : kPackedInnerBlock;
      const bool last = k0 + kb >= op.inner;
      for (int64_t q = first; q < end; q += 2) {
        // Next: the group's next pair at this K block, else its first pair at the next K block,
        // else the next group's first pair.
        const int64_t next_p = q + 2 < end ? q + 2 : (last ? end : first);
        const int64_t next_k = q + 2 < end ? k0 : (last ? 0 : k0 + kb);
        gemm_block<V, T, 2>(op, q, k0, kb, next_p, next_k, scratch);
      }
    }
  }
}

template <class V, class T, int STREAMS>
void columns(const LinearOperands& op, int64_t n_begin, int64_t n_end, float* scratch) {
  const int64_t p_end = (n_end + kPanelColumns - 1) / kPanelColumns;
  int64_t p = n_begin / kPanelColumns;
  if constexpr (V::kPairRows > 0) {
    if (op.rows > 1) {
      int64_t pairs_end = p;
      while (pairs_end + 2 <= p_end && (pairs_end + 2) * kPanelColumns <= op.columns) {
        pairs_end += 2;
      }
      if (streams_rows<V, T, 2>(op)) {
        for (; p < pairs_end; p += 2) {
          gemm_panels<V, T, 2>(op, p, scratch);
        }
      } else {
        gemm_pairs<V, T>(op, p, pairs_end, scratch);
        p = pairs_end;
      }
    }
  }
  if (op.rows == 1) {
    for (; p + STREAMS <= p_end; p += STREAMS) {
      gemv_panels<V, T, STREAMS, STREAMS>(op, p);
    }
    if constexpr (STREAMS > 2) {
      for (; p + 2 <= p_end; p += 2) {
        gemv_panels<V, T, 2, STREAMS>(op, p);
      }
    }
  }
  for (; p < p_end; ++p) {
    if (op.rows == 1) {
      gemv_panels<V, T, 1, STREAMS>(op, p);
    } else {
      gemm_panels<V, T, 1>(op, p, scratch);
    }
  }
}

// STREAMS: weight streams per thread of the GEMV.
template <class V, int STREAMS>
void linear_columns(const LinearOperands& op, int64_t n_begin, int64_t n_end, float* scratch) {
  switch (op.weight_dtype) {
    case DType::kF16: columns<V, F16, STREAMS>(op, n_begin, n_end, scratch); break;
    case DType::kBF16: columns<V, Bf16, STREAMS>(op, n_begin, n_end, scratch); break;
    default: columns<V, F32, STREAMS>(op, n_begin, n_end, scratch); break;
  }
}

}  // namespace staticlm::cpu::tiles
