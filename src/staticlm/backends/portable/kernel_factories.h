// SPDX-License-Identifier: Apache-2.0
// The portable backend's kernel factories, one per op, and the checks they share. Each factory
// receives a signature that has already passed infer_outputs; it re-checks only what it relies
// on (arity, dtypes it implements), parses attributes, precomputes what does not depend on
// the data, and returns an owned Kernel. Factories fail with InvalidArgument for a malformed
// signature or attribute and Unimplemented for a dtype this backend does not run; messages
// start with the op name.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>

#include "staticlm/backends/portable/element_access.h"
#include "staticlm/core/result.h"
#include "staticlm/runtime/kernel.h"

namespace staticlm::portable {

using KernelResult = Result<std::unique_ptr<Kernel>>;

KernelResult make_embedding_kernel(const KernelSignature& signature);
KernelResult make_linear_kernel(const KernelSignature& signature);
KernelResult make_rms_norm_kernel(const KernelSignature& signature);
KernelResult make_layer_norm_kernel(const KernelSignature& signature);
KernelResult make_rope_kernel(const KernelSignature& signature);
KernelResult make_attention_kernel(const KernelSignature& signature);
KernelResult make_kv_cache_update_kernel(const KernelSignature& signature);
KernelResult make_add_kernel(const KernelSignature& signature);
KernelResult make_mul_kernel(const KernelSignature& signature);
KernelResult make_silu_kernel(const KernelSignature& signature);
KernelResult make_gelu_kernel(const KernelSignature& signature);
KernelResult make_softmax_kernel(const KernelSignature& signature);
KernelResult make_reshape_kernel(const KernelSignature& signature);
KernelResult make_transpose_kernel(const KernelSignature& signature);
KernelResult make_slice_kernel(const KernelSignature& signature);
KernelResult make_concat_kernel(const KernelSignature& signature);
KernelResult make_cast_kernel(const KernelSignature& signature);
// swiglu and geglu (the gate's activation follows from the op).
KernelResult make_swiglu_kernel(const KernelSignature& signature);
// The gate's activation of swiglu / swiglu_linear (silu) and geglu / geglu_linear (gelu_tanh).
enum class GateActivation { kSilu, kGeluTanh };
inline GateActivation gate_activation(OpKind op) {
  return op == OpKind::kGeglu || op == OpKind::kGegluLinear ? GateActivation::kGeluTanh : GateActivation::kSilu;
}
KernelResult make_multi_linear_kernel(const KernelSignature& signature);
KernelResult make_linear_add_kernel(const KernelSignature& signature);
// swiglu_linear and geglu_linear.
KernelResult make_swiglu_linear_kernel(const KernelSignature& signature);
KernelResult make_qkv_rope_cache_kernel(const KernelSignature& signature);
KernelResult make_windowed_attention_kernel(const KernelSignature& signature);
KernelResult make_softcap_kernel(const KernelSignature& signature);

// Checks that the signature has between min_inputs and max_inputs inputs (max_inputs < 0:
// no upper bound), that the first min_inputs are present, and that it has exactly one output.
Status check_signature(const KernelSignature& signature, size_t min_inputs, int max_inputs);

// Reads the int attribute `name` (default `fallback` when absent, nullopt: required) as an axis
// of a rank-`rank` tensor, negative values counting from the end. Fails with InvalidArgument
// when it is missing, not an int, or out of range.
Result<size_t> read_axis(const KernelSignature& signature, std::string_view name, std::optional<int64_t> fallback,
                         size_t rank);

// Fails with Unimplemented when `input` is not f32, f16 or bf16.
Status check_float_weight(const KernelSignature& signature, const TensorSpec& input, std::string_view role);
// Fails with Unimplemented when `input` is not f32, f16, bf16, q8_0 or q4_0 (a matrix the kernel
// widens row by row: an embedding table, a linear weight).
Status check_matrix_weight(const KernelSignature& signature, const TensorSpec& input, std::string_view role);
// A matrix input of the kernel's node: number `matrix` of its weight_shapes (0 for linear and
// embedding, the part for multi_linear), dtype checked as check_matrix_weight does, layout and
// logical shape read from the node's attributes.
Result<MatrixRef> matrix_input(const KernelSignature& signature, int64_t matrix, const TensorSpec& input,
                               std::string_view role);

// Fails with Unimplemented when `dtype` is block-quantized (layout kernels move whole elements).
Status check_plain_dtype(const KernelSignature& signature, DType dtype);

}  // namespace staticlm::portable
