// SPDX-License-Identifier: Apache-2.0
// What the cpu backend's kernels over packed weights share (linear_kernel.cpp,
// qkv_rope_cache_kernel.cpp): a weight and its operands as the panels take them, the rows of a
// call (x rounded or quantized once for every part), and how output columns become items of work
// for the thread pool.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "staticlm/backends/cpu/kernels/cpu_kernel_factories.h"
#include "staticlm/backends/cpu/kernels/linear_columns.h"
#include "staticlm/backends/cpu/kernels/quantized_rows.h"
#include "staticlm/core/result.h"
#include "staticlm/runtime/kernel.h"

namespace staticlm::cpu {

inline constexpr uintptr_t kLineBytes = 64;
inline constexpr int64_t kLineFloats = kLineBytes / sizeof(float);

// One weight of the kernel: its sizes and dtypes, and where its operands are in the call.
struct Part {
  LinearOperands shape;  // the pointers are bound per call
  size_t weight_input = 0;
  int bias_input = -1;
  int residual_input = -1;  // linear_add: the residual added to the output
};

// The rows a call computes: a chunk's real rows (a short prompt costs its own tokens, not the
// chunk's), x from the first of them, and x rounded to bf16 for an entry whose GEMM multiplies
// bf16 pairs, or quantized per group for int8 / int4 weights (in the calling thread's buffers,
// once for every part; the workers only read them).
struct CallRows {
  int64_t rows = 0;
  int64_t padding = 0;
  const float* x = nullptr;
  const uint16_t* x_bf16 = nullptr;
  const QuantizedRows* x_quantized = nullptr;
  // Rows of the blocks the call's GEMM runs (the bf16 GEMM's where x is rounded), which a slice
  // of rows keeps whole: a 66-row slice in tiles of 16 would end in a block of 2 costing 16.
  int64_t block_rows = 0;
};

// The GEMM's widened K block: per thread, so concurrent sessions never share one; allocated once.
float* thread_scratch();

// `shape` is the first part's: its weights say whether x is rounded or quantized, and the entry's
// `entry_points` how (its bf16 rounding, its quantizer) and its float GEMM's blocks of rows.
CallRows call_rows(const float* x, const LinearOperands& shape, const KernelContext& context,
                   const LinearEntryPoints& entry_points);

// Part `part` bound to the call's rows and tensors.
LinearOperands bind_part(const Part& part, const CallRows& call, std::span<const TensorView> inputs,
                         const TensorView& output);

// Output columns per item of work: LinearEntryPoints::gemm_panels panels for the float GEMM (a
// range that split a pair would leave both halves to the one-panel kernel), one panel for the
// float GEMV (a panel's sums do not depend on its partner, and SmolLM's 18-panel o_proj and
// down_proj then split 9 / 9 instead of 10 / 8) and for int8 / int4 panels.
int64_t item_columns(const LinearOperands& shape, const LinearEntryPoints& entry_points);
int64_t items_of(int64_t columns, int64_t item_columns);
// The fewest items a range of a call's `items` takes (ThreadPool::parallel_for's min_chunk),
// given the multiply-adds of one. A one-row call (decode) streams weights from memory: one
// contiguous range per thread keeps each thread's streams long and claims nothing, where a few
// claimed ranges per thread left one thread idle for half a range at the end of every op on
// average (`staticlm bench`'s decode). A call of more rows claims ranges of enough work to be
// worth a thread, a few per thread, which balances the GEMM's uneven tails.
int64_t items_per_range(int64_t items, int64_t rows, int64_t item_work, int threads);

// Into how many slices of rows a float GEMM call cuts each item, so its items spread evenly
// over the threads: SmolLM's o_proj and down_proj have 9 items of 64 columns, and two threads
// took 5 and 4 of them, one waiting while the other ran its fifth (`staticlm bench --ops`). A slice
// keeps whole blocks of the micro-kernel's `block_rows` rows (LinearEntryPoints::float_block_rows);
// 1 where the items already balance, the rows are few, or the entry cuts no slices (block_rows 0).
int64_t row_slices(int64_t items, int64_t rows, int threads, int64_t block_rows);
// Rows [first, first + count) of a float `op` alone (its x, x_bf16 and out moved on).
LinearOperands row_span(const LinearOperands& op, int64_t first, int64_t count);
// The first row of slice `slice` of `slices` over `rows` rows (the last slice ends at `rows`),
// slices holding whole blocks of `block_rows` (the call's GEMM's, CallRows::block_rows).
int64_t slice_start(int64_t rows, int64_t slices, int64_t slice, int64_t block_rows);

// `op`'s columns [first, first + count) alone, as a linear of those columns writing
// [rows, count] to `out`. `first` is a multiple of kPanelColumns.
LinearOperands column_span(const LinearOperands& op, int64_t first, int64_t count, float* out);

// Part of a kernel over x: weight (matrix input `matrix` of the node) and bias as the panels take
// them, or Unimplemented.
Result<Part> make_part(const TensorSpec& x, const TensorSpec& weight, const TensorSpec* bias, const Attributes& attrs,
                       int64_t matrix, const LinearEntryPoints& entry_points);
LinearColumnsFn columns_fn(const Part& part, const LinearEntryPoints& entry_points);
// The parts of one kernel share x, so they share its quantization: one format and group, or
// all float.
Status check_same_format(const std::vector<Part>& parts, std::string_view op);

}  // namespace staticlm::cpu
