// SPDX-License-Identifier: Apache-2.0
// The closed op set for decoder-only LLMs, and the single source of truth for each op's
// signature: input arity, which input an op updates in place, and output inference.
// The graph builder, the graph verifier and the runtime's load-time check all call
// infer_outputs, so a program whose op instances do not type-check is refused before it runs.
// Semantics of every op are documented in docs/ops.md.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/core/tensor.h"
#include "staticlm/ops/attributes.h"

namespace staticlm {

// Numeric values are stable (they appear in placement reports and tests); names are what the
// program file stores.
enum class OpKind : uint8_t {
  kEmbedding = 0,
  kLinear,
  kRmsNorm,
  kLayerNorm,
  kRope,
  kAttention,
  kKvCacheUpdate,
  kAdd,
  kMul,
  kSilu,
  kGelu,
  kSoftmax,
  kReshape,
  kTranspose,
  kSlice,
  kConcat,
  kCast,
  // Fused ops: each has a portable reference equal to the ops it replaces (docs/ops.md), so a
  // backend's pass may introduce it and every backend can still run the program.
  kSwiglu,             // silu(gate) * up
  kMultiLinear,        // linear(x, w_i, b_i) for each of `parts` weights: one op for q/k/v or gate/up
  kLinearAdd,          // residual + linear(x, w, b): o_proj / down_proj with the residual connection
  kSwigluLinear,       // swiglu(linear(x, w_gate), linear(x, w_up)): the gated MLP's first half
  kQkvRopeCache,       // q / k / v projections, rope on q and k, k and v written into the caches in place
  kWindowedAttention,  // attention over the last `window` slots, scores soft-capped (Gemma, Mistral)
  kSoftcap,            // cap * tanh(x / cap): Gemma's logit soft-capping
  // GeGLU (Gemma): swiglu's and swiglu_linear's form with gelu(approximate=tanh) for silu. Ops of
  // their own, not an attribute: a runtime that predates them refuses the program by the op's
  // name instead of computing silu.
  kGeglu,
  kGegluLinear,
};

// The eps a norm uses when its attribute is absent (docs/ops.md); every kernel reads these.
inline constexpr double kRmsNormDefaultEps = 1e-6;
inline constexpr double kLayerNormDefaultEps = 1e-5;

// An op's inputs as seen by inference: nullptr marks an absent optional input.
using InputSpecs = std::span<const TensorSpec* const>;

// No input of the op holds positions.
inline constexpr int kNoPositionsInput = -1;

// Everything the graph, the passes and the executor know about an op: its arity, how its outputs
// follow from its inputs, and the facts the executor plans with.
struct OpDef {
  OpKind kind;
  std::string_view name;
  int min_inputs;
  int max_inputs;  // -1: variadic
  Result<std::vector<TensorSpec>> (*infer)(InputSpecs inputs, const Attributes& attrs);
  // Row r of every chunk-shaped output reads only row r of the chunk-shaped inputs (and whole
  // other inputs: weights, caches), so the chunk's last row alone needs only their last rows.
  bool row_wise = false;
  // The input holding each row's absolute position (a negative one marks a padding row), or
  // kNoPositionsInput.
  int positions_input = kNoPositionsInput;
  // Sets the attributes docs/ops.md gives a default for and `attrs` lacks; nullptr: none has one.
  // Called on an instance that passed inference.
  void (*fill_defaults)(InputSpecs inputs, Attributes& attrs) = nullptr;
};

std::span<const OpDef> all_ops();
const OpDef& op_def(OpKind kind);
inline std::string_view op_name(OpKind kind) {
  return op_def(kind).name;
}
// Fails with NotFound listing the known ops.
Result<OpKind> find_op(std::string_view name);

// How multi_linear's inputs divide: x, then `parts` weights, then no biases or one per weight.
// Read from its `parts` attribute and its input count; InvalidArgument when they do not fit.
struct MultiLinearSplit {
  int64_t parts = 0;
  bool biased = false;
};
Result<MultiLinearSplit> multi_linear_split(size_t num_inputs, const Attributes& attrs);

// The inputs of an op instance that are matrices laid out by its weight_layout attribute, in
// matrix order (the `matrix` index of matrix_layout): embedding's table; linear's and
// linear_add's weight; swiglu_linear's gate and up; each multi_linear weight. Empty for other
// ops and for an instance whose inputs do not fit its op.
std::vector<size_t> matrix_inputs(OpKind kind, size_t num_inputs, const Attributes& attrs);

// Checks arity, dtypes, shapes and attributes of one op instance and returns its output specs.
// Fails with InvalidArgument naming the op and the offending input or attribute.
Result<std::vector<TensorSpec>> infer_outputs(OpKind kind, InputSpecs inputs, const Attributes& attrs);

// The instance's attributes with every absent one that has a default set to it, so a kernel
// reads each value the op set means. `inputs` must have passed infer_outputs.
Attributes with_default_attributes(OpKind kind, InputSpecs inputs, const Attributes& attrs);

// attention's scale when its attribute is absent: 1 / sqrt(head_dim).
double attention_default_scale(int64_t head_dim);

// qkv_rope_cache's inputs, fixed positions; the three biases are present together or not at all.
namespace qkv_rope_cache {
inline constexpr size_t kX = 0;
inline constexpr size_t kQWeight = 1;  // matrices 0, 1, 2 of the weight layout attributes
inline constexpr size_t kKWeight = 2;
inline constexpr size_t kVWeight = 3;
inline constexpr size_t kKeyCache = 4;
inline constexpr size_t kValueCache = 5;
inline constexpr size_t kPositions = 6;
inline constexpr size_t kQBias = 7;
inline constexpr size_t kUnbiasedInputs = 7;
inline constexpr size_t kBiasedInputs = 10;
// With q / k norms (an RMSNorm of each head before the rope, with the attribute qk_norm_eps:
// Qwen3's and Gemma 3's), their two weights [head_dim] come last: 9 or 12 inputs.
inline constexpr size_t kNormInputs = 2;
inline bool has_biases(size_t count) {
  return count == kBiasedInputs || count == kBiasedInputs + kNormInputs;
}
inline bool has_norms(size_t count) {
  return count == kUnbiasedInputs + kNormInputs || count == kBiasedInputs + kNormInputs;
}
// The q norm's input; the k norm's follows it.
inline size_t q_norm_input(size_t count) {
  return count - kNormInputs;
}
// Its outputs: the rotated queries, then the key and value caches (updated in place).
inline constexpr size_t kQueries = 0;
inline constexpr size_t kKeys = 1;
inline constexpr size_t kValues = 2;
}  // namespace qkv_rope_cache

// An output that shares an input's storage: the op updates that input in place.
struct InPlaceUpdate {
  size_t output;
  size_t input;
};

// The in-place updates of an op instance: kv_cache_update with in_place=1 (output 0 is input 0),
// qkv_rope_cache (outputs 1 and 2 are the key and value caches); none for every other op.
std::vector<InPlaceUpdate> in_place_updates(OpKind kind, const Attributes& attrs);

}  // namespace staticlm
