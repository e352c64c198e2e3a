// SPDX-License-Identifier: Apache-2.0
#include "conformance/op_cases.h"

namespace staticlm::conformance {
namespace {

CaseInput activation(Shape shape) {
  return {{DType::kF32, std::move(shape)}, false, Fill::kUniform, 0, {}};
}
CaseInput weight(DType dtype, Shape shape) {
  return {{dtype, std::move(shape)}, true, Fill::kUniform, 0, {}};
}
CaseInput cache(DType dtype, Shape shape) {
  return {{dtype, std::move(shape)}, false, Fill::kUniform, 0, {}};
}
CaseInput ids(DType dtype, Shape shape, int64_t limit) {
  return {{dtype, std::move(shape)}, false, Fill::kIds, limit, {}};
}
CaseInput positions(DType dtype, std::vector<int64_t> values) {
  const auto count = static_cast<int64_t>(values.size());
  return {{dtype, {count}}, false, Fill::kExplicit, 0, std::move(values)};
}

std::vector<OpCase> build() {
  std::vector<OpCase> cases;
  auto add = [&](std::string name, OpKind op, std::vector<CaseInput> inputs, Attributes attributes = {},
                 double tolerance = 1e-5) {
    cases.push_back({std::move(name), op, std::move(inputs), std::move(attributes), tolerance});
  };
  // Embedding: every table dtype, odd vocabularies, both id types.
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0}) {
    add(str_cat("embedding_", dtype_name(dtype)), OpKind::kEmbedding,
        {weight(dtype, {37, 64}), ids(DType::kI64, {1, 5}, 37)});
  }
  add("embedding_i32_ids", OpKind::kEmbedding, {weight(DType::kF32, {11, 24}), ids(DType::kI32, {3}, 11)});
  // Linear: decode (M = 1) and prefill (M = 7) rows, odd K and N, every weight dtype, bias.
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    add(str_cat("linear_", dtype_name(dtype), "_decode_k67_n13"), OpKind::kLinear,
        {activation({1, 1, 67}), weight(dtype, {13, 67})});
    add(str_cat("linear_", dtype_name(dtype), "_prefill_k67_n13"), OpKind::kLinear,
        {activation({1, 7, 67}), weight(dtype, {13, 67})});
  }
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0}) {
    add(str_cat("linear_", dtype_name(dtype), "_decode_k96_n19"), OpKind::kLinear,
        {activation({1, 1, 96}), weight(dtype, {19, 96})}, {}, 1e-4);
    add(str_cat("linear_", dtype_name(dtype), "_prefill_k96_n19"), OpKind::kLinear,
        {activation({1, 5, 96}), weight(dtype, {19, 96})}, {}, 1e-4);
  }
  add("linear_bias_bf16", OpKind::kLinear,
      {activation({3, 33}), weight(DType::kF32, {9, 33}), weight(DType::kBF16, {9})});
  add("linear_wide_n257", OpKind::kLinear, {activation({1, 2, 16}), weight(DType::kF16, {257, 16})});
  // Norms.
  add("rms_norm_odd", OpKind::kRmsNorm, {activation({1, 5, 67}), weight(DType::kF32, {67})}, {{"eps", 1e-5}});
  add("rms_norm_bf16_weight", OpKind::kRmsNorm, {activation({2, 16}), weight(DType::kBF16, {16})});
  add("layer_norm_bias", OpKind::kLayerNorm,
      {activation({3, 1, 20}), weight(DType::kF32, {20}), weight(DType::kF16, {20})});
  add("layer_norm_no_bias", OpKind::kLayerNorm, {activation({4, 9}), weight(DType::kF32, {9})});
  // Rope: padding rows, partial rotary dims, every scaling.
  add("rope_plain", OpKind::kRope, {activation({1, 5, 3, 16}), positions(DType::kI64, {-1, 0, 1, 2, 3})},
      {{"theta", 10000.0}});
  add("rope_partial_linear", OpKind::kRope, {activation({1, 4, 2, 32}), positions(DType::kI32, {7, 8, 9, 10})},
      {{"theta", 500000.0}, {"rotary_dim", int64_t{16}}, {"scaling", std::string("linear")}, {"factor", 4.0}});
  add("rope_llama3", OpKind::kRope, {activation({1, 3, 4, 16}), positions(DType::kI64, {100, 101, 102})},
      {{"theta", 500000.0},
       {"scaling", std::string("llama3")},
       {"factor", 8.0},
       {"low_freq_factor", 1.0},
       {"high_freq_factor", 4.0},
       {"original_max_position", int64_t{64}}});
  // Phi-3's longrope: a factor per rotated channel pair, 12 of 16 channels rotating.
  add("rope_partial_longrope", OpKind::kRope, {activation({1, 3, 2, 16}), positions(DType::kI64, {-1, 40, 41})},
      {{"theta", 10000.0},
       {"rotary_dim", int64_t{12}},
       {"scaling", std::string("longrope")},
       {"frequency_factors", std::string("1,1.25,2.5,5,11,23")}});
  // Attention over a static cache: grouped heads, odd cache length, padding rows, f16 caches.
  for (DType dtype : {DType::kF32, DType::kF16}) {
    add(str_cat("attention_prefill_", dtype_name(dtype)), OpKind::kAttention,
        {activation({1, 5, 4, 16}), cache(dtype, {1, 2, 11, 16}), cache(dtype, {1, 2, 11, 16}),
         positions(DType::kI64, {-1, 3, 4, 5, 6})},
        {{"scale", 0.25}}, 1e-4);
    add(str_cat("attention_decode_", dtype_name(dtype)), OpKind::kAttention,
        {activation({1, 1, 6, 8}), cache(dtype, {1, 3, 13, 8}), cache(dtype, {1, 3, 13, 8}),
         positions(DType::kI64, {12})},
        {{"scale", 0.35}}, 1e-4);
  }
  // Windowed attention: a window shorter than the rows' histories, with and without a soft-cap.
  for (DType dtype : {DType::kF32, DType::kF16}) {
    add(str_cat("windowed_attention_prefill_", dtype_name(dtype)), OpKind::kWindowedAttention,
        {activation({1, 5, 4, 16}), cache(dtype, {1, 2, 11, 16}), cache(dtype, {1, 2, 11, 16}),
         positions(DType::kI64, {-1, 3, 4, 5, 6})},
        {{"scale", 0.25}, {"window", int64_t{3}}, {"softcap", 0.5}}, 1e-4);
  }
  // q8_0 caches (blocks of 32 along head_dim): a prefill over two blocks per row, a decode, a window.
  add("attention_prefill_q8_0", OpKind::kAttention,
      {activation({1, 5, 4, 64}), cache(DType::kQ8_0, {1, 2, 11, 64}), cache(DType::kQ8_0, {1, 2, 11, 64}),
       positions(DType::kI64, {-1, 3, 4, 5, 6})},
      {{"scale", 0.125}}, 1e-4);
  add("attention_decode_q8_0", OpKind::kAttention,
      {activation({1, 1, 6, 32}), cache(DType::kQ8_0, {1, 3, 70, 32}), cache(DType::kQ8_0, {1, 3, 70, 32}),
       positions(DType::kI64, {69})},
      {{"scale", 0.2}}, 1e-4);
  add("windowed_attention_prefill_q8_0", OpKind::kWindowedAttention,
      {activation({1, 5, 4, 32}), cache(DType::kQ8_0, {1, 2, 11, 32}), cache(DType::kQ8_0, {1, 2, 11, 32}),
       positions(DType::kI64, {-1, 3, 4, 5, 6})},
      {{"scale", 0.25}, {"window", int64_t{3}}, {"softcap", 0.5}}, 1e-4);
  add("windowed_attention_decode_uncapped", OpKind::kWindowedAttention,
      {activation({1, 1, 6, 8}), cache(DType::kF32, {1, 3, 13, 8}), cache(DType::kF32, {1, 3, 13, 8}),
       positions(DType::kI64, {12})},
      {{"window", int64_t{4}}}, 1e-4);
  // KV cache updates, in place and returned, with padding rows; q8_0 rows quantized per block.
  for (DType dtype : {DType::kF32, DType::kF16, DType::kQ8_0}) {
    const int64_t dim = dtype == DType::kQ8_0 ? 64 : 8;
    for (int64_t in_place : {int64_t{0}, int64_t{1}}) {
      add(str_cat("kv_cache_update_", dtype_name(dtype), in_place ? "_in_place" : "_returned"), OpKind::kKvCacheUpdate,
          {cache(dtype, {1, 2, 9, dim}), activation({1, 3, 2, dim}), positions(DType::kI64, {-1, 4, 5})},
          {{"in_place", in_place}}, 1e-3);
    }
  }
  // Elementwise, with broadcasting and odd sizes.
  add("add_broadcast", OpKind::kAdd, {activation({2, 3, 5}), activation({5})});
  add("mul_broadcast_middle", OpKind::kMul, {activation({2, 1, 7}), activation({3, 1})});
  // Granite's multipliers and Gemma's embedding scale (a scalar), Phi-3's rope attention factor (a
  // trailing row), a product of one shape.
  add("mul_scalar", OpKind::kMul, {activation({1, 5, 67}), activation({1})});
  add("mul_trailing_row", OpKind::kMul, {activation({1, 3, 2, 16}), activation({16})});
  add("mul_same_shape", OpKind::kMul, {activation({3, 67}), activation({3, 67})});
  add("silu_odd", OpKind::kSilu, {activation({1, 3, 67})});
  add("gelu_erf", OpKind::kGelu, {activation({5, 13})});
  add("gelu_tanh", OpKind::kGelu, {activation({5, 13})}, {{"approximate", std::string("tanh")}});
  add("softcap_odd", OpKind::kSoftcap, {activation({3, 67})}, {{"cap", 0.6}});
  add("softcap_final_logits", OpKind::kSoftcap, {activation({2, 1000})}, {{"cap", 0.3}});
  // multi_linear: q / k / v widths at decode, two biased parts at prefill.
  add("multi_linear_decode_qkv", OpKind::kMultiLinear,
      {activation({1, 1, 67}), weight(DType::kF32, {13, 67}), weight(DType::kF32, {5, 67}),
       weight(DType::kF32, {5, 67})},
      {{"parts", int64_t{3}}});
  add("multi_linear_prefill_bias", OpKind::kMultiLinear,
      {activation({1, 7, 67}), weight(DType::kBF16, {13, 67}), weight(DType::kBF16, {6, 67}),
       weight(DType::kBF16, {13}), weight(DType::kBF16, {6})},
      {{"parts", int64_t{2}}});
  add("swiglu_odd", OpKind::kSwiglu, {activation({1, 3, 67}), activation({1, 3, 67})});
  add("geglu_odd", OpKind::kGeglu, {activation({1, 3, 67}), activation({1, 3, 67})});
  // The linears with their epilogues: odd widths, a bias, 16-bit weights.
  add("linear_add_decode", OpKind::kLinearAdd,
      {activation({1, 1, 67}), weight(DType::kF32, {13, 67}), activation({1, 1, 13})});
  add("linear_add_prefill_bias", OpKind::kLinearAdd,
      {activation({1, 7, 67}), weight(DType::kBF16, {45, 67}), activation({1, 7, 45}), weight(DType::kBF16, {45})});
  add("swiglu_linear_decode", OpKind::kSwigluLinear,
      {activation({1, 1, 67}), weight(DType::kF16, {37, 67}), weight(DType::kF16, {37, 67})});
  add("swiglu_linear_prefill", OpKind::kSwigluLinear,
      {activation({1, 7, 67}), weight(DType::kF32, {37, 67}), weight(DType::kF32, {37, 67})});
  add("geglu_linear_decode", OpKind::kGegluLinear,
      {activation({1, 1, 67}), weight(DType::kBF16, {37, 67}), weight(DType::kBF16, {37, 67})});
  add("geglu_linear_prefill", OpKind::kGegluLinear,
      {activation({1, 7, 67}), weight(DType::kF32, {37, 67}), weight(DType::kF32, {37, 67})});
  // q / k / v with rope and the cache writes: decode, a prefill into f16 caches with biases and a
  // negative position inside the chunk (a leading one would be padding, whose outputs are
  // unspecified: cpu_kernels_test covers those), and heads narrower than a panel (the cpu
  // backend declines those: portable kernel).
  add("qkv_rope_cache_decode", OpKind::kQkvRopeCache,
      {activation({1, 1, 67}), weight(DType::kF32, {64, 67}), weight(DType::kF32, {32, 67}),
       weight(DType::kF32, {32, 67}), cache(DType::kF32, {1, 1, 9, 32}), cache(DType::kF32, {1, 1, 9, 32}),
       positions(DType::kI64, {8})},
      {{"theta", 10000.0}}, 1e-4);
  add("qkv_rope_cache_prefill_f16_bias", OpKind::kQkvRopeCache,
      {activation({1, 5, 67}), weight(DType::kBF16, {128, 67}), weight(DType::kBF16, {64, 67}),
       weight(DType::kBF16, {64, 67}), cache(DType::kF16, {1, 2, 11, 32}), cache(DType::kF16, {1, 2, 11, 32}),
       positions(DType::kI32, {3, -1, 4, 5, 6}), weight(DType::kBF16, {128}), weight(DType::kBF16, {64}),
       weight(DType::kBF16, {64})},
      {{"theta", 500000.0}}, 1e-3);
  // Into q8_0 caches: a k / v value that lands on a rounding boundary may take the neighbouring
  // code after another summation order, so the caches are compared within a step of the codes.
  add("qkv_rope_cache_prefill_q8_0", OpKind::kQkvRopeCache,
      {activation({1, 4, 67}), weight(DType::kF32, {128, 67}), weight(DType::kF32, {64, 67}),
       weight(DType::kF32, {64, 67}), cache(DType::kQ8_0, {1, 2, 9, 32}), cache(DType::kQ8_0, {1, 2, 9, 32}),
       positions(DType::kI64, {4, -1, 5, 6})},
      {{"theta", 10000.0}}, 5e-2);
  // With Qwen3's / Gemma 3's per-head q and k norms: alone (9 inputs) and after biases (12).
  add("qkv_rope_cache_prefill_qk_norms", OpKind::kQkvRopeCache,
      {activation({1, 4, 67}), weight(DType::kF32, {128, 67}), weight(DType::kF32, {64, 67}),
       weight(DType::kF32, {64, 67}), cache(DType::kF32, {1, 2, 9, 32}), cache(DType::kF32, {1, 2, 9, 32}),
       positions(DType::kI64, {4, -1, 5, 6}), weight(DType::kF32, {32}), weight(DType::kF32, {32})},
      {{"theta", 1000000.0}, {"qk_norm_eps", 1e-6}}, 1e-4);
  add("qkv_rope_cache_decode_bias_qk_norms", OpKind::kQkvRopeCache,
      {activation({1, 1, 67}), weight(DType::kBF16, {64, 67}), weight(DType::kBF16, {32, 67}),
       weight(DType::kBF16, {32, 67}), cache(DType::kF16, {1, 1, 9, 32}), cache(DType::kF16, {1, 1, 9, 32}),
       positions(DType::kI64, {8}), weight(DType::kBF16, {64}), weight(DType::kBF16, {32}), weight(DType::kBF16, {32}),
       weight(DType::kBF16, {32}), weight(DType::kBF16, {32})},
      {{"theta", 10000.0}, {"qk_norm_eps", 1e-6}}, 1e-3);
  add("qkv_rope_cache_narrow_heads", OpKind::kQkvRopeCache,
      {activation({1, 3, 24}), weight(DType::kF16, {32, 24}), weight(DType::kF16, {16, 24}),
       weight(DType::kF16, {16, 24}), cache(DType::kF32, {1, 1, 7, 16}), cache(DType::kF32, {1, 1, 7, 16}),
       positions(DType::kI64, {0, 1, 2})},
      {{"theta", 10000.0}}, 1e-4);
  add("softmax_last", OpKind::kSoftmax, {activation({3, 17})});
  add("softmax_middle", OpKind::kSoftmax, {activation({2, 5, 3})}, {{"axis", int64_t{1}}});
  // Layout.
  add("reshape", OpKind::kReshape, {activation({2, 3, 4})}, {{"shape", Shape{4, -1}}});
  add("transpose", OpKind::kTranspose, {activation({2, 3, 5})}, {{"perm", Shape{2, 0, 1}}});
  add("slice_step", OpKind::kSlice, {activation({3, 11})},
      {{"axis", int64_t{1}}, {"start", int64_t{1}}, {"end", int64_t{10}}, {"step", int64_t{2}}});
  add("concat", OpKind::kConcat, {activation({2, 3}), activation({2, 5}), activation({2, 1})}, {{"axis", int64_t{-1}}});
  add("cast_f16", OpKind::kCast, {activation({9})}, {{"dtype", std::string("f16")}});
  add("cast_bf16", OpKind::kCast, {activation({9})}, {{"dtype", std::string("bf16")}});
  add("cast_i32", OpKind::kCast, {activation({9})}, {{"dtype", std::string("i32")}});
  return cases;
}

}  // namespace

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = build();
  return cases;
}

}  // namespace staticlm::conformance
