// SPDX-License-Identifier: Apache-2.0
// Factories of the cpu backend's own kernels. Each takes the ISA entry point its registry entry
// was made for, and declines (Unimplemented) the signatures it does not run, so the registry
// falls through to the next entry and, at the end of the chain, the portable kernel.
#pragma once

#include <memory>

#include "staticlm/backends/cpu/kernels/attention_rows.h"
#include "staticlm/backends/cpu/kernels/elementwise_rows.h"
#include "staticlm/backends/cpu/kernels/linear_columns.h"
#include "staticlm/backends/cpu/kernels/quantized_rows.h"
#include "staticlm/core/result.h"
#include "staticlm/runtime/kernel.h"

namespace staticlm::cpu {

// An elementwise loop over two inputs of one length: swiglu (gate, up) or add (a, b). out may be
// either input.
using PairwiseFn = void (*)(const float* a, const float* b, float* out, int64_t count);
// A loop over one input with one float parameter (scale's factor, softcap's cap).
using ScaleFn = void (*)(const float* x, float value, float* out, int64_t count);

using RoundBf16Fn = void (*)(const float* x, int64_t count, uint16_t* out);

// How an entry whose chunk GEMM multiplies bf16 rounds x: with `round` (null: it does not), for
// calls of at least `min_rows` rows (fewer run the f32 GEMM on the widened weights); its GEMM
// runs blocks of `block_rows` rows, which a slice of a call's rows keeps whole.
struct Bf16Rounding {
  RoundBf16Fn round = nullptr;
  int64_t min_rows = 0;
  int64_t block_rows = 0;
};

// The entry points one registry entry uses: `gemv` for one row of x (decode), `gemm` for more,
// `quantized` for int8 / int4 panels (either may be null: the entry declines those weights).
struct LinearEntryPoints {
  LinearColumnsFn gemv = nullptr;
  LinearColumnsFn gemm = nullptr;
  // Set for the bf16 GEMM entries: they take only bf16 weights, and round x per call.
  Bf16Rounding bf16 = {};
  // swiglu_linear's silu(gate) * up (gelu_tanh(gate) * up for GeGLU) and linear_add's residual
  // add, of the same instruction set.
  PairwiseFn swiglu = nullptr;
  PairwiseFn geglu = nullptr;
  PairwiseFn add = nullptr;
  LinearColumnsFn quantized = nullptr;
  // How `quantized` wants x: each group quantized by this, of the entry's instruction set.
  QuantizeGroupFn quantize_group = quantize_group_scalar;
  // Panels the float GEMM's micro-kernel takes at once: threads take a chunk's output columns in
  // items of this many, so no range splits them (2 on AVX-512, linear_tiles.h). Decode, the
  // quantized kernels and the other ISAs take panels one at a time, and finer items balance better.
  int64_t gemm_panels = 1;
  // Rows of the float GEMM micro-kernel's blocks, which a slice of a call's rows keeps whole
  // (linear_parts.h's row_slices); 0: calls are never cut into slices of rows.
  int64_t float_block_rows = 0;
  // qkv_rope_cache's rotation of one head, of the same instruction set (elementwise_rows.h).
  void (*rotate_half)(const float* x, const float* cos, const float* sin, float* out, int64_t half) = nullptr;
  // qkv_rope_cache's q / k norm of one head (rms_norm of elementwise_rows.h), of the same set.
  void (*rms_norm)(const float* x, const float* weight, float* out, int64_t width, float eps) = nullptr;
};

Result<std::unique_ptr<Kernel>> make_linear_kernel(const KernelSignature& signature, LinearEntryPoints entry_points);
// Every part in one split of the output columns (one barrier); at most 8 parts.
Result<std::unique_ptr<Kernel>> make_multi_linear_kernel(const KernelSignature& signature,
                                                         LinearEntryPoints entry_points);

// residual + linear: the residual added as each range of columns is done.
Result<std::unique_ptr<Kernel>> make_linear_add_kernel(const KernelSignature& signature,
                                                       LinearEntryPoints entry_points);
// silu(x . w_gate) * (x . w_up), panel by panel: neither product is written out.
Result<std::unique_ptr<Kernel>> make_swiglu_linear_kernel(const KernelSignature& signature,
                                                          LinearEntryPoints entry_points);

// q / k / v one head per item, each head rotated and written to its cache row as it is done.
Result<std::unique_ptr<Kernel>> make_qkv_rope_cache_kernel(const KernelSignature& signature,
                                                           LinearEntryPoints entry_points);

Result<std::unique_ptr<Kernel>> make_attention_kernel(const KernelSignature& signature, AttentionRowFns fns);

Result<std::unique_ptr<Kernel>> make_swiglu_kernel(const KernelSignature& signature, ElementwiseFns fns);
Result<std::unique_ptr<Kernel>> make_add_kernel(const KernelSignature& signature, ElementwiseFns fns);
Result<std::unique_ptr<Kernel>> make_mul_kernel(const KernelSignature& signature, ElementwiseFns fns);
Result<std::unique_ptr<Kernel>> make_softcap_kernel(const KernelSignature& signature, ElementwiseFns fns);
Result<std::unique_ptr<Kernel>> make_rms_norm_kernel(const KernelSignature& signature, ElementwiseFns fns);
Result<std::unique_ptr<Kernel>> make_rope_kernel(const KernelSignature& signature, ElementwiseFns fns);

}  // namespace staticlm::cpu
