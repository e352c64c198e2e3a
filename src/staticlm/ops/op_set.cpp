// SPDX-License-Identifier: Apache-2.0
#include "staticlm/ops/op_set.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "staticlm/core/checked_math.h"
#include "staticlm/core/str_cat.h"
#include "staticlm/ops/rope.h"
#include "staticlm/ops/weight_layout.h"

namespace staticlm {
namespace {

using Specs = Result<std::vector<TensorSpec>>;

bool is_weight_dtype(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}
// Matrices a kernel streams row by row (embedding tables, linear weights) may also be
// block-quantized along their rows (docs/ops.md: q8_0, q4_0).
bool is_matrix_weight_dtype(DType dtype) {
  return is_weight_dtype(dtype) || dtype == DType::kQ8_0 || dtype == DType::kQ4_0;
}
constexpr std::string_view kMatrixWeightDtypes = "f32, f16, bf16, q8_0 or q4_0";

// A block-quantized matrix holds whole blocks per row.
Status expect_whole_blocks(const TensorSpec& matrix, std::string_view role) {
  const uint32_t block = dtype_info(matrix.dtype).block_elements;
  if (block > 1 && matrix.shape[1] % block != 0) {
    return invalid_argument(role, ": ", dtype_name(matrix.dtype), " rows of ", matrix.shape[1],
                            " elements are not whole ", block, "-element blocks");
  }
  return ok_status();
}

bool is_index_dtype(DType dtype) {
  return dtype == DType::kI32 || dtype == DType::kI64;
}
bool is_cache_dtype(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kQ8_0;
}

Status expect_dtype(const TensorSpec& spec, std::string_view role, bool (*allowed)(DType),
                    std::string_view allowed_names) {
  if (!allowed(spec.dtype)) {
    return invalid_argument(role, ": expected dtype ", allowed_names, ", found ", dtype_name(spec.dtype));
  }
  return ok_status();
}

Status expect_f32(const TensorSpec& spec, std::string_view role) {
  return expect_dtype(
      spec, role, [](DType d) { return d == DType::kF32; }, "f32");
}

Status expect_rank(const TensorSpec& spec, std::string_view role, size_t rank) {
  if (spec.shape.size() != rank) {
    return invalid_argument(role, ": expected rank ", rank, ", found shape ", shape_string(spec.shape));
  }
  return ok_status();
}

// A KV cache [batch, kv_heads, cache_len, head_dim]: f32, f16, or q8_0 rows of whole blocks.
Status expect_cache(const TensorSpec& cache, std::string_view role) {
  STATICLM_RETURN_IF_ERROR(expect_dtype(cache, role, is_cache_dtype, "f32, f16 or q8_0"));
  STATICLM_RETURN_IF_ERROR(expect_rank(cache, str_cat(role, " [batch, kv_heads, cache_len, head_dim]"), 4));
  if (cache.dtype == DType::kQ8_0 && cache.shape[3] % 32 != 0) {
    return invalid_argument(role, ": a q8_0 cache needs head_dim a multiple of 32 (its block), found ", cache.shape[3]);
  }
  return ok_status();
}

Status expect_at_least_rank(const TensorSpec& spec, std::string_view role, size_t rank) {
  if (spec.shape.size() < rank) {
    return invalid_argument(role, ": expected rank >= ", rank, ", found shape ", shape_string(spec.shape));
  }
  return ok_status();
}

Status expect_dim(const TensorSpec& spec, std::string_view role, size_t axis, int64_t expected) {
  if (spec.shape[axis] != expected) {
    return invalid_argument(role, ": expected dimension ", axis, " to be ", expected, ", found shape ",
                            shape_string(spec.shape));
  }
  return ok_status();
}

// Normalizes a possibly negative axis against `rank`.
Result<size_t> normalize_axis(int64_t axis, size_t rank, std::string_view attr) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    return invalid_argument("attribute '", attr, "': axis ", axis, " is out of range for rank ", rank);
  }
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

// A matrix input (linear weight, embedding table) as its op reads it: [N, K] for rows, the
// logical shape for panel32 (whose stored shape matrix_layout checks).
Result<Shape> matrix_shape(const TensorSpec& matrix, std::string_view role, const Attributes& attrs, int64_t index) {
  auto layout = matrix_layout(attrs, index, matrix);
  if (!layout.ok()) {
    return layout.status().with_context(role);
  }
  if (*layout) {
    return Shape{(*layout)->rows, (*layout)->cols};
  }
  STATICLM_RETURN_IF_ERROR(expect_dtype(matrix, role, is_matrix_weight_dtype, kMatrixWeightDtypes));
  STATICLM_RETURN_IF_ERROR(expect_rank(matrix, role, 2));
  STATICLM_RETURN_IF_ERROR(expect_whole_blocks(matrix, role));
  return matrix.shape;
}

Specs infer_embedding(InputSpecs in, const Attributes& attrs) {
  const TensorSpec& table = *in[0];
  const TensorSpec& ids = *in[1];
  STATICLM_ASSIGN_OR_RETURN(Shape table_shape, matrix_shape(table, "table", attrs, 0));
  STATICLM_RETURN_IF_ERROR(expect_dtype(ids, "ids", is_index_dtype, "i32 or i64"));
  Shape out = ids.shape;
  out.push_back(table_shape[1]);
  return std::vector<TensorSpec>{{DType::kF32, out}};
}

// Weight number `index` of a node's attributes (linear: 0; multi_linear: its part).
Specs infer_linear_part(InputSpecs in, const Attributes& attrs, int64_t index) {
  const TensorSpec& x = *in[0];
  const TensorSpec& weight = *in[1];
  STATICLM_RETURN_IF_ERROR(expect_f32(x, "input"));
  STATICLM_RETURN_IF_ERROR(expect_at_least_rank(x, "input", 1));
  STATICLM_ASSIGN_OR_RETURN(Shape weight_shape, matrix_shape(weight, "weight", attrs, index));
  if (weight_shape[1] != x.shape.back()) {
    return invalid_argument("weight: expected [out, ", x.shape.back(), "] to match input ", shape_string(x.shape),
                            ", found ", shape_string(weight_shape));
  }
  if (in.size() > 2 && in[2] != nullptr) {
    const TensorSpec& bias = *in[2];
    STATICLM_RETURN_IF_ERROR(expect_dtype(bias, "bias", is_weight_dtype, "f32, f16 or bf16"));
    STATICLM_RETURN_IF_ERROR(expect_rank(bias, "bias", 1));
    STATICLM_RETURN_IF_ERROR(expect_dim(bias, "bias", 0, weight_shape[0]));
  }
  Shape out = x.shape;
  out.back() = weight_shape[0];
  return std::vector<TensorSpec>{{DType::kF32, out}};
}

Specs infer_linear(InputSpecs in, const Attributes& attrs) {
  return infer_linear_part(in, attrs, 0);
}

Status check_norm_eps(const Attributes& attrs, double fallback) {
  STATICLM_ASSIGN_OR_RETURN(double eps, attrs.get_float_or("eps", fallback));
  if (!(eps >= 0.0)) {
    return invalid_argument("attribute 'eps': expected a value >= 0, found ", eps);
  }
  return ok_status();
}

Specs infer_norm(InputSpecs in, const Attributes& attrs, double default_eps) {
  const TensorSpec& x = *in[0];
  STATICLM_RETURN_IF_ERROR(expect_f32(x, "input"));
  STATICLM_RETURN_IF_ERROR(expect_at_least_rank(x, "input", 1));
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i] == nullptr) {
      continue;
    }
    std::string_view role = i == 1 ? "weight" : "bias";
    STATICLM_RETURN_IF_ERROR(expect_dtype(*in[i], role, is_weight_dtype, "f32, f16 or bf16"));
    STATICLM_RETURN_IF_ERROR(expect_rank(*in[i], role, 1));
    STATICLM_RETURN_IF_ERROR(expect_dim(*in[i], role, 0, x.shape.back()));
  }
  STATICLM_RETURN_IF_ERROR(check_norm_eps(attrs, default_eps));
  return std::vector<TensorSpec>{x};
}

Specs infer_rms_norm(InputSpecs in, const Attributes& attrs) {
  return infer_norm(in, attrs, kRmsNormDefaultEps);
}
Specs infer_layer_norm(InputSpecs in, const Attributes& attrs) {
  return infer_norm(in, attrs, kLayerNormDefaultEps);
}

Status check_positions(const TensorSpec& positions, int64_t seq_len) {
  STATICLM_RETURN_IF_ERROR(expect_dtype(positions, "positions", is_index_dtype, "i32 or i64"));
  STATICLM_RETURN_IF_ERROR(expect_rank(positions, "positions", 1));
  return expect_dim(positions, "positions", 0, seq_len);
}

Specs infer_rope(InputSpecs in, const Attributes& attrs) {
  const TensorSpec& x = *in[0];
  STATICLM_RETURN_IF_ERROR(expect_f32(x, "input"));
  STATICLM_RETURN_IF_ERROR(expect_rank(x, "input [batch, seq, heads, head_dim]", 4));
  STATICLM_RETURN_IF_ERROR(check_positions(*in[1], x.shape[1]));
  STATICLM_RETURN_IF_ERROR(RopeParams::from_attributes(attrs, x.shape[3]).status());
  return std::vector<TensorSpec>{x};
}

// q [B, S, Hq, D], k/v cache [B, Hkv, C, D], positions [S] -> [B, S, Hq, D].
Specs infer_attention(InputSpecs in, const Attributes& attrs) {
  const TensorSpec& q = *in[0];
  const TensorSpec& k = *in[1];
  const TensorSpec& v = *in[2];
  STATICLM_RETURN_IF_ERROR(expect_f32(q, "query"));
  STATICLM_RETURN_IF_ERROR(expect_rank(q, "query [batch, seq, heads, head_dim]", 4));
  STATICLM_RETURN_IF_ERROR(expect_cache(k, "key cache"));
  if (v != k) {
    return invalid_argument("value cache: expected the key cache's ", dtype_name(k.dtype), shape_string(k.shape),
                            ", found ", dtype_name(v.dtype), shape_string(v.shape));
  }
  if (k.shape[0] != q.shape[0] || k.shape[3] != q.shape[3]) {
    return invalid_argument("key cache ", shape_string(k.shape), " does not match query ", shape_string(q.shape),
                            " in batch or head_dim");
  }
  if (k.shape[1] <= 0 || q.shape[2] % k.shape[1] != 0) {
    return invalid_argument("query heads (", q.shape[2], ") must be a multiple of kv heads (", k.shape[1], ")");
  }
  STATICLM_RETURN_IF_ERROR(check_positions(*in[3], q.shape[1]));
  STATICLM_ASSIGN_OR_RETURN(double scale, attrs.get_float_or("scale", attention_default_scale(q.shape[3])));
  if (!(scale > 0.0)) {
    return invalid_argument("attribute 'scale': expected a value > 0, found ", scale);
  }
  return std::vector<TensorSpec>{q};
}

// attention's, plus a window (slots a query attends, its own included; 0: every one up to it) and
// a soft-cap of the scores (0: none).
Specs infer_windowed_attention(InputSpecs in, const Attributes& attrs) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<TensorSpec> out, infer_attention(in, attrs));
  STATICLM_ASSIGN_OR_RETURN(int64_t window, attrs.get_int_or("window", 0));
  if (window < 0) {
    return invalid_argument("attribute 'window': expected a value >= 0, found ", window);
  }
  STATICLM_ASSIGN_OR_RETURN(double softcap, attrs.get_float_or("softcap", 0.0));
  if (!(softcap >= 0.0) || !std::isfinite(softcap)) {
    return invalid_argument("attribute 'softcap': expected a finite value >= 0, found ", softcap);
  }
  return out;
}

// cache [B, Hkv, C, D], rows [B, S, Hkv, D], positions [S] -> cache.
Specs infer_kv_cache_update(InputSpecs in, const Attributes& attrs) {
  const TensorSpec& cache = *in[0];
  const TensorSpec& rows = *in[1];
  STATICLM_RETURN_IF_ERROR(expect_cache(cache, "cache"));
  STATICLM_RETURN_IF_ERROR(expect_f32(rows, "rows"));
  STATICLM_RETURN_IF_ERROR(expect_rank(rows, "rows [batch, seq, kv_heads, head_dim]", 4));
  if (rows.shape[0] != cache.shape[0] || rows.shape[2] != cache.shape[1] || rows.shape[3] != cache.shape[3]) {
    return invalid_argument("rows ", shape_string(rows.shape), " do not match cache ", shape_string(cache.shape));
  }
  STATICLM_RETURN_IF_ERROR(check_positions(*in[2], rows.shape[1]));
  STATICLM_ASSIGN_OR_RETURN(int64_t in_place, attrs.get_int_or("in_place", 1));
  if (in_place != 0 && in_place != 1) {
    return invalid_argument("attribute 'in_place': expected 0 or 1, found ", in_place);
  }
  return std::vector<TensorSpec>{cache};
}

Result<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return invalid_argument("shapes ", shape_string(a), " and ", shape_string(b), " do not broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Specs infer_binary(InputSpecs in, const Attributes&) {
  STATICLM_RETURN_IF_ERROR(expect_f32(*in[0], "lhs"));
  STATICLM_RETURN_IF_ERROR(expect_f32(*in[1], "rhs"));
  STATICLM_ASSIGN_OR_RETURN(Shape out, broadcast_shapes(in[0]->shape, in[1]->shape));
  return std::vector<TensorSpec>{{DType::kF32, out}};
}

Specs infer_swiglu(InputSpecs in, const Attributes&) {
  STATICLM_RETURN_IF_ERROR(expect_f32(*in[0], "gate"));
  STATICLM_RETURN_IF_ERROR(expect_f32(*in[1], "up"));
  if (in[0]->shape != in[1]->shape) {
    return invalid_argument("up: expected the gate's shape ", shape_string(in[0]->shape), ", found ",
                            shape_string(in[1]->shape));
  }
  return std::vector<TensorSpec>{*in[0]};
}

// Each part type-checks as a linear of its own.
Specs infer_multi_linear(InputSpecs in, const Attributes& attrs) {
  STATICLM_ASSIGN_OR_RETURN(MultiLinearSplit split, multi_linear_split(in.size(), attrs));
  std::vector<TensorSpec> outputs;
  for (int64_t p = 0; p < split.parts; ++p) {
    const TensorSpec* linear[3] = {in[0], in[static_cast<size_t>(1 + p)],
                                   split.biased ? in[static_cast<size_t>(1 + split.parts + p)] : nullptr};
    auto part = infer_linear_part(InputSpecs(linear, split.biased ? 3 : 2), attrs, p);
    if (!part.ok()) {
      return part.status().with_context(str_cat("part ", p));
    }
    outputs.push_back(part->front());
  }
  return outputs;
}

// x, weight, residual, [bias]: the linear of (x, weight, bias), and a residual of its output's spec.
Specs infer_linear_add(InputSpecs in, const Attributes& attrs) {
  const TensorSpec* linear[3] = {in[0], in[1], in.size() > 3 ? in[3] : nullptr};
  STATICLM_ASSIGN_OR_RETURN(std::vector<TensorSpec> out, infer_linear_part(InputSpecs(linear, 3), attrs, 0));
  const TensorSpec& residual = *in[2];
  if (residual != out[0]) {
    return invalid_argument("residual: expected the linear's output ", dtype_name(out[0].dtype),
                            shape_string(out[0].shape), ", found ", dtype_name(residual.dtype),
                            shape_string(residual.shape));
  }
  return out;
}

// x, w_gate, w_up: two linears of one output shape (matrices 0 and 1 of the attributes).
Specs infer_swiglu_linear(InputSpecs in, const Attributes& attrs) {
  const TensorSpec* gate[2] = {in[0], in[1]};
  const TensorSpec* up[2] = {in[0], in[2]};
  auto gate_out = infer_linear_part(InputSpecs(gate, 2), attrs, 0);
  if (!gate_out.ok()) {
    return gate_out.status().with_context("gate");
  }
  auto up_out = infer_linear_part(InputSpecs(up, 2), attrs, 1);
  if (!up_out.ok()) {
    return up_out.status().with_context("up");
  }
  if (up_out->front() != gate_out->front()) {
    return invalid_argument("up: expected the gate's output shape ", shape_string(gate_out->front().shape), ", found ",
                            shape_string(up_out->front().shape));
  }
  return gate_out;
}

// x [B, S, K], w_q / w_k / w_v (matrices 0-2), key and value caches [B, Hkv, C, D], positions [S],
// optionally the three biases -> queries [B, S, Hq, D] rotated, and the two caches.
Specs infer_qkv_rope_cache(InputSpecs in, const Attributes& attrs) {
  namespace io = qkv_rope_cache;
  const bool biased = io::has_biases(in.size());
  const bool normed = io::has_norms(in.size());
  if (in.size() != io::kUnbiasedInputs && !biased && !normed) {
    return invalid_argument("expected ", io::kUnbiasedInputs, " inputs, ", io::kBiasedInputs,
                            " with the three biases, and 2 more with the q and k norms, found ", in.size());
  }
  const TensorSpec& x = *in[io::kX];
  STATICLM_RETURN_IF_ERROR(expect_rank(x, "input [batch, seq, hidden]", 3));
  const TensorSpec& keys = *in[io::kKeyCache];
  STATICLM_RETURN_IF_ERROR(expect_cache(keys, "key cache"));
  if (*in[io::kValueCache] != keys) {
    return invalid_argument("value cache: expected the key cache's ", dtype_name(keys.dtype), shape_string(keys.shape),
                            ", found ", dtype_name(in[io::kValueCache]->dtype),
                            shape_string(in[io::kValueCache]->shape));
  }
  if (keys.shape[0] != x.shape[0]) {
    return invalid_argument("key cache ", shape_string(keys.shape), " does not match input ", shape_string(x.shape),
                            " in batch");
  }
  const int64_t head_dim = keys.shape[3];
  const int64_t kv_width = keys.shape[1] * head_dim;
  Shape queries;
  const char* const roles[3] = {"q", "k", "v"};
  for (size_t p = 0; p < 3; ++p) {
    const TensorSpec* linear[3] = {&x, in[io::kQWeight + p], biased ? in[io::kQBias + p] : nullptr};
    auto part = infer_linear_part(InputSpecs(linear, 3), attrs, static_cast<int64_t>(p));
    if (!part.ok()) {
      return part.status().with_context(roles[p]);
    }
    const int64_t width = part->front().shape.back();
    if (p == 0) {
      if (head_dim <= 0 || width % head_dim != 0) {
        return invalid_argument("q: ", width, " outputs are not whole heads of the caches' head_dim ", head_dim);
      }
      queries = {x.shape[0], x.shape[1], width / head_dim, head_dim};
    } else if (width != kv_width) {
      return invalid_argument(roles[p], ": expected kv_heads * head_dim = ", kv_width, " outputs (the caches' ",
                              shape_string(keys.shape), "), found ", width);
    }
  }
  STATICLM_RETURN_IF_ERROR(check_positions(*in[io::kPositions], x.shape[1]));
  STATICLM_RETURN_IF_ERROR(RopeParams::from_attributes(attrs, head_dim).status());
  if (normed) {
    for (size_t n = 0; n < io::kNormInputs; ++n) {
      const TensorSpec& norm = *in[io::q_norm_input(in.size()) + n];
      const char* role = n == 0 ? "q norm" : "k norm";
      STATICLM_RETURN_IF_ERROR(expect_dtype(norm, role, is_weight_dtype, "f32, f16 or bf16"));
      if (norm.shape != Shape{head_dim}) {
        return invalid_argument(role, ": expected [head_dim] = [", head_dim, "], found ", shape_string(norm.shape));
      }
    }
    STATICLM_ASSIGN_OR_RETURN(double eps, attrs.get_float("qk_norm_eps"));
    if (!(eps > 0.0) || !std::isfinite(eps)) {
      return invalid_argument("attribute 'qk_norm_eps': expected a finite value > 0, found ", eps);
    }
  } else if (attrs.has("qk_norm_eps")) {
    return invalid_argument("attribute 'qk_norm_eps' without the q and k norms' inputs");
  }
  return std::vector<TensorSpec>{{DType::kF32, queries}, keys, keys};
}

Specs infer_unary(InputSpecs in, const Attributes&) {
  STATICLM_RETURN_IF_ERROR(expect_f32(*in[0], "input"));
  return std::vector<TensorSpec>{*in[0]};
}

Specs infer_gelu(InputSpecs in, const Attributes& attrs) {
  STATICLM_ASSIGN_OR_RETURN(std::string approximate, attrs.get_string_or("approximate", "none"));
  if (approximate != "none" && approximate != "tanh") {
    return invalid_argument("attribute 'approximate': expected none or tanh, found '", approximate, "'");
  }
  return infer_unary(in, attrs);
}

Specs infer_softcap(InputSpecs in, const Attributes& attrs) {
  STATICLM_ASSIGN_OR_RETURN(double cap, attrs.get_float("cap"));
  if (!(cap > 0.0) || !std::isfinite(cap)) {
    return invalid_argument("attribute 'cap': expected a finite value > 0, found ", cap);
  }
  return infer_unary(in, attrs);
}

Specs infer_softmax(InputSpecs in, const Attributes& attrs) {
  STATICLM_RETURN_IF_ERROR(expect_f32(*in[0], "input"));
  STATICLM_RETURN_IF_ERROR(expect_at_least_rank(*in[0], "input", 1));
  STATICLM_ASSIGN_OR_RETURN(int64_t axis, attrs.get_int_or("axis", -1));
  STATICLM_RETURN_IF_ERROR(normalize_axis(axis, in[0]->shape.size(), "axis").status());
  return std::vector<TensorSpec>{*in[0]};
}

Specs infer_reshape(InputSpecs in, const Attributes& attrs) {
  const TensorSpec& x = *in[0];
  STATICLM_ASSIGN_OR_RETURN(Shape shape, attrs.get_ints("shape"));
  const int64_t total = num_elements(x.shape);
  // The product of the non-zero dimensions may overflow while a zero dimension still makes
  // the shape valid (an empty tensor), so overflow only matters when there is no zero.
  uint64_t nonzero_product = 1;
  bool overflowed = false;
  bool has_zero = false;
  int inferred_axis = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred_axis >= 0) {
        return invalid_argument("attribute 'shape': more than one -1 in ", shape_string(shape));
      }
      inferred_axis = static_cast<int>(i);
    } else if (shape[i] < 0) {
      return invalid_argument("attribute 'shape': negative dimension in ", shape_string(shape));
    } else if (shape[i] == 0) {
      has_zero = true;
    } else if (auto next = checked_mul(nonzero_product, static_cast<uint64_t>(shape[i]))) {
      nonzero_product = *next;
    } else {
      overflowed = true;
    }
  }
  if (!has_zero && (overflowed || nonzero_product > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
    return invalid_argument("attribute 'shape': ", shape_string(shape), " does not match input ",
                            shape_string(x.shape));
  }
  const int64_t known = has_zero ? 0 : static_cast<int64_t>(nonzero_product);
  if (inferred_axis >= 0) {
    if (known == 0 || total % known != 0) {
      return invalid_argument("attribute 'shape': cannot infer -1 in ", shape_string(shape), " for input ",
                              shape_string(x.shape));
    }
    shape[static_cast<size_t>(inferred_axis)] = total / known;
  } else if (known != total) {
    return invalid_argument("attribute 'shape': ", shape_string(shape), " has ", known, " elements, input ",
                            shape_string(x.shape), " has ", total);
  }
  return std::vector<TensorSpec>{{x.dtype, shape}};
}

Specs infer_transpose(InputSpecs in, const Attributes& attrs) {
  const TensorSpec& x = *in[0];
  STATICLM_ASSIGN_OR_RETURN(std::vector<int64_t> perm, attrs.get_ints("perm"));
  if (perm.size() != x.shape.size()) {
    return invalid_argument("attribute 'perm': ", shape_string(perm), " does not match rank ", x.shape.size());
  }
  std::vector<bool> used(perm.size(), false);
  Shape out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(perm.size()) || used[static_cast<size_t>(perm[i])]) {
      return invalid_argument("attribute 'perm': ", shape_string(perm), " is not a permutation");
    }
    used[static_cast<size_t>(perm[i])] = true;
    out[i] = x.shape[static_cast<size_t>(perm[i])];
  }
  return std::vector<TensorSpec>{{x.dtype, out}};
}

Specs infer_slice(InputSpecs in, const Attributes& attrs) {
  const TensorSpec& x = *in[0];
  STATICLM_RETURN_IF_ERROR(expect_at_least_rank(x, "input", 1));
  STATICLM_ASSIGN_OR_RETURN(int64_t axis_attr, attrs.get_int("axis"));
  STATICLM_ASSIGN_OR_RETURN(size_t axis, normalize_axis(axis_attr, x.shape.size(), "axis"));
  STATICLM_ASSIGN_OR_RETURN(int64_t start, attrs.get_int("start"));
  STATICLM_ASSIGN_OR_RETURN(int64_t end, attrs.get_int("end"));
  STATICLM_ASSIGN_OR_RETURN(int64_t step, attrs.get_int_or("step", 1));
  const int64_t dim = x.shape[axis];
  if (step <= 0) {
    return invalid_argument("attribute 'step': expected a value > 0, found ", step);
  }
  if (start < 0 || end < start || end > dim) {
    return invalid_argument("slice [", start, ", ", end, ") is outside axis ", axis, " of ", shape_string(x.shape));
  }
  Shape out = x.shape;
  // Written so that a huge step cannot overflow.
  out[axis] = end == start ? 0 : (end - start - 1) / step + 1;
  return std::vector<TensorSpec>{{x.dtype, out}};
}

Specs infer_concat(InputSpecs in, const Attributes& attrs) {
  const TensorSpec& first = *in[0];
  STATICLM_RETURN_IF_ERROR(expect_at_least_rank(first, "input 0", 1));
  STATICLM_ASSIGN_OR_RETURN(int64_t axis_attr, attrs.get_int("axis"));
  STATICLM_ASSIGN_OR_RETURN(size_t axis, normalize_axis(axis_attr, first.shape.size(), "axis"));
  Shape out = first.shape;
  for (size_t i = 1; i < in.size(); ++i) {
    const TensorSpec& other = *in[i];
    bool compatible = other.dtype == first.dtype && other.shape.size() == first.shape.size();
    for (size_t d = 0; compatible && d < out.size(); ++d) {
      compatible = d == axis || other.shape[d] == first.shape[d];
    }
    if (!compatible) {
      return invalid_argument("input ", i, " ", dtype_name(other.dtype), shape_string(other.shape),
                              " cannot be concatenated with ", dtype_name(first.dtype), shape_string(first.shape),
                              " along axis ", axis);
    }
    if (__builtin_add_overflow(out[axis], other.shape[axis], &out[axis])) {
      return invalid_argument("input ", i, ": the concatenated axis ", axis, " overflows 64 bits");
    }
  }
  return std::vector<TensorSpec>{{first.dtype, out}};
}

bool is_castable(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16 || dtype == DType::kI32 ||
         dtype == DType::kI64;
}

Specs infer_cast(InputSpecs in, const Attributes& attrs) {
  STATICLM_RETURN_IF_ERROR(expect_dtype(*in[0], "input", is_castable, "f32, f16, bf16, i32 or i64"));
  STATICLM_ASSIGN_OR_RETURN(std::string name, attrs.get_string("dtype"));
  auto target = parse_dtype(name);
  if (!target.ok() || !is_castable(*target)) {
    return invalid_argument("attribute 'dtype': expected f32, f16, bf16, i32 or i64, found '", name, "'");
  }
  return std::vector<TensorSpec>{{*target, in[0]->shape}};
}

void set_if_absent(Attributes& attrs, std::string name, AttrValue value) {
  if (!attrs.has(name)) {
    attrs.set(std::move(name), std::move(value));
  }
}

void rms_norm_defaults(InputSpecs, Attributes& attrs) {
  set_if_absent(attrs, "eps", kRmsNormDefaultEps);
}
void layer_norm_defaults(InputSpecs, Attributes& attrs) {
  set_if_absent(attrs, "eps", kLayerNormDefaultEps);
}

// rope's and qkv_rope_cache's: what RopeParams reads for an absent attribute.
void rope_defaults(int64_t head_dim, Attributes& attrs) {
  const Result<RopeParams> params = RopeParams::from_attributes(attrs, head_dim);
  if (!params.ok()) {
    return;
  }
  Attributes explicit_params;
  params->to_attributes(explicit_params);
  for (const auto& [name, value] : explicit_params.entries()) {
    set_if_absent(attrs, name, value);
  }
}
void rope_op_defaults(InputSpecs in, Attributes& attrs) {
  rope_defaults(in[0]->shape[3], attrs);
}
void qkv_rope_cache_defaults(InputSpecs in, Attributes& attrs) {
  rope_defaults(in[qkv_rope_cache::kKeyCache]->shape[3], attrs);
}

void attention_defaults(InputSpecs in, Attributes& attrs) {
  set_if_absent(attrs, "scale", attention_default_scale(in[0]->shape[3]));
}
void windowed_attention_defaults(InputSpecs in, Attributes& attrs) {
  attention_defaults(in, attrs);
  set_if_absent(attrs, "window", int64_t{0});
  set_if_absent(attrs, "softcap", 0.0);
}
void kv_cache_update_defaults(InputSpecs, Attributes& attrs) {
  set_if_absent(attrs, "in_place", int64_t{1});
}
void gelu_defaults(InputSpecs, Attributes& attrs) {
  set_if_absent(attrs, "approximate", std::string("none"));
}
void softmax_defaults(InputSpecs, Attributes& attrs) {
  set_if_absent(attrs, "axis", int64_t{-1});
}
void slice_defaults(InputSpecs, Attributes& attrs) {
  set_if_absent(attrs, "step", int64_t{1});
}

constexpr bool kRowWise = true;
constexpr bool kNotRowWise = false;

// Row-wise: linears, norms, rope, elementwise ops and casts act on each row alone; attention is
// causal by position, so a row reads its own query and the caches; a reshape between chunk-shaped
// shapes keeps each row's bytes together (total / rows).
constexpr std::array<OpDef, 26> kOps = {{
    {OpKind::kEmbedding, "embedding", 2, 2, infer_embedding, kNotRowWise},
    {OpKind::kLinear, "linear", 2, 3, infer_linear, kRowWise},
    {OpKind::kRmsNorm, "rms_norm", 2, 2, infer_rms_norm, kRowWise, kNoPositionsInput, rms_norm_defaults},
    {OpKind::kLayerNorm, "layer_norm", 2, 3, infer_layer_norm, kRowWise, kNoPositionsInput, layer_norm_defaults},
    {OpKind::kRope, "rope", 2, 2, infer_rope, kRowWise, 1, rope_op_defaults},
    {OpKind::kAttention, "attention", 4, 4, infer_attention, kRowWise, 3, attention_defaults},
    {OpKind::kKvCacheUpdate, "kv_cache_update", 3, 3, infer_kv_cache_update, kNotRowWise, 2, kv_cache_update_defaults},
    {OpKind::kAdd, "add", 2, 2, infer_binary, kRowWise},
    {OpKind::kMul, "mul", 2, 2, infer_binary, kRowWise},
    {OpKind::kSilu, "silu", 1, 1, infer_unary, kRowWise},
    {OpKind::kGelu, "gelu", 1, 1, infer_gelu, kRowWise, kNoPositionsInput, gelu_defaults},
    {OpKind::kSoftmax, "softmax", 1, 1, infer_softmax, kNotRowWise, kNoPositionsInput, softmax_defaults},
    {OpKind::kReshape, "reshape", 1, 1, infer_reshape, kRowWise},
    {OpKind::kTranspose, "transpose", 1, 1, infer_transpose, kNotRowWise},
    {OpKind::kSlice, "slice", 1, 1, infer_slice, kNotRowWise, kNoPositionsInput, slice_defaults},
    {OpKind::kConcat, "concat", 1, -1, infer_concat, kNotRowWise},
    {OpKind::kCast, "cast", 1, 1, infer_cast, kRowWise},
    {OpKind::kSwiglu, "swiglu", 2, 2, infer_swiglu, kRowWise},
    {OpKind::kMultiLinear, "multi_linear", 2, -1, infer_multi_linear, kRowWise},
    {OpKind::kLinearAdd, "linear_add", 3, 4, infer_linear_add, kRowWise},
    {OpKind::kSwigluLinear, "swiglu_linear", 3, 3, infer_swiglu_linear, kRowWise},
    {OpKind::kQkvRopeCache, "qkv_rope_cache", 7, 12, infer_qkv_rope_cache, kNotRowWise,
     static_cast<int>(qkv_rope_cache::kPositions), qkv_rope_cache_defaults},
    {OpKind::kWindowedAttention, "windowed_attention", 4, 4, infer_windowed_attention, kRowWise, 3,
     windowed_attention_defaults},
    {OpKind::kSoftcap, "softcap", 1, 1, infer_softcap, kRowWise},
    {OpKind::kGeglu, "geglu", 2, 2, infer_swiglu, kRowWise},
    {OpKind::kGegluLinear, "geglu_linear", 3, 3, infer_swiglu_linear, kRowWise},
}};

}  // namespace

Result<MultiLinearSplit> multi_linear_split(size_t num_inputs, const Attributes& attrs) {
  STATICLM_ASSIGN_OR_RETURN(int64_t parts, attrs.get_int("parts"));
  const auto count = static_cast<int64_t>(num_inputs);
  // parts is bounded by the count before it is doubled: the attribute comes from a file.
  if (parts < 1 || parts >= count || (count != 1 + parts && count != 1 + 2 * parts)) {
    return invalid_argument("attribute 'parts': expected the number of weights (the op has x, the weights and ",
                            "optionally one bias each: ", count, " inputs), found ", parts);
  }
  return MultiLinearSplit{parts, count == 1 + 2 * parts};
}

std::vector<size_t> matrix_inputs(OpKind kind, size_t num_inputs, const Attributes& attrs) {
  switch (kind) {
    case OpKind::kEmbedding: return num_inputs >= 1 ? std::vector<size_t>{0} : std::vector<size_t>{};
    case OpKind::kLinear:
    case OpKind::kLinearAdd: return num_inputs >= 2 ? std::vector<size_t>{1} : std::vector<size_t>{};
    case OpKind::kSwigluLinear:
    case OpKind::kGegluLinear: return num_inputs == 3 ? std::vector<size_t>{1, 2} : std::vector<size_t>{};
    case OpKind::kQkvRopeCache:
      return num_inputs >= qkv_rope_cache::kUnbiasedInputs
                 ? std::vector<size_t>{qkv_rope_cache::kQWeight, qkv_rope_cache::kKWeight, qkv_rope_cache::kVWeight}
                 : std::vector<size_t>{};
    case OpKind::kMultiLinear: {
      const Result<MultiLinearSplit> split = multi_linear_split(num_inputs, attrs);
      std::vector<size_t> inputs;
      for (int64_t p = 0; split.ok() && p < split->parts; ++p) {
        inputs.push_back(static_cast<size_t>(1 + p));
      }
      return inputs;
    }
    default: return {};
  }
}

std::span<const OpDef> all_ops() {
  return kOps;
}

const OpDef& op_def(OpKind kind) {
  const auto index = static_cast<size_t>(kind);
  return index < kOps.size() ? kOps[index] : kOps[0];
}

Result<OpKind> find_op(std::string_view name) {
  std::string known;
  for (const OpDef& def : kOps) {
    if (def.name == name) {
      return def.kind;
    }
    known += known.empty() ? "" : ", ";
    known += def.name;
  }
  return not_found("unknown op '", name, "' (known: ", known, ")");
}

Result<std::vector<TensorSpec>> infer_outputs(OpKind kind, InputSpecs inputs, const Attributes& attrs) {
  const OpDef& def = op_def(kind);
  const auto count = static_cast<int>(inputs.size());
  if (count < def.min_inputs || (def.max_inputs >= 0 && count > def.max_inputs)) {
    return invalid_argument(def.name, ": expected ", def.min_inputs,
                            def.max_inputs == def.min_inputs ? "" : (def.max_inputs < 0 ? " or more" : " to "),
                            def.max_inputs > def.min_inputs ? std::to_string(def.max_inputs) : "", " inputs, found ",
                            count);
  }
  for (int i = 0; i < def.min_inputs; ++i) {
    if (inputs[static_cast<size_t>(i)] == nullptr) {
      return invalid_argument(def.name, ": required input ", i, " is absent");
    }
  }
  if (def.max_inputs < 0) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i] == nullptr) {
        return invalid_argument(def.name, ": input ", i, " is absent");
      }
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] != nullptr && !checked_num_elements(inputs[i]->shape)) {
      return invalid_argument(def.name, ": input ", i, " has an invalid shape ", shape_string(inputs[i]->shape));
    }
  }
  auto result = def.infer(inputs, attrs);
  if (!result.ok()) {
    return result.status().with_context(def.name);
  }
  return result;
}

Attributes with_default_attributes(OpKind kind, InputSpecs inputs, const Attributes& attrs) {
  Attributes complete = attrs;
  if (const OpDef& def = op_def(kind); def.fill_defaults != nullptr) {
    def.fill_defaults(inputs, complete);
  }
  return complete;
}

double attention_default_scale(int64_t head_dim) {
  return head_dim > 0 ? 1.0 / std::sqrt(static_cast<double>(head_dim)) : 1.0;
}

std::vector<InPlaceUpdate> in_place_updates(OpKind kind, const Attributes& attrs) {
  if (kind == OpKind::kQkvRopeCache) {
    return {{qkv_rope_cache::kKeys, qkv_rope_cache::kKeyCache}, {qkv_rope_cache::kValues, qkv_rope_cache::kValueCache}};
  }
  if (kind != OpKind::kKvCacheUpdate) {
    return {};
  }
  auto in_place = attrs.get_int_or("in_place", 1);
  if (in_place.ok() && *in_place == 1) {
    return {{0, 0}};
  }
  return {};
}

}  // namespace staticlm
