// SPDX-License-Identifier: Apache-2.0
#include "staticlm/ops/op_set.h"

#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

TensorSpec f32(Shape shape) {
  return {DType::kF32, std::move(shape)};
}
TensorSpec typed(DType dtype, Shape shape) {
  return {dtype, std::move(shape)};
}

// Runs inference on `inputs` (std::nullopt = an absent optional input) and returns the only output.
Result<TensorSpec> infer(OpKind op, const std::vector<std::optional<TensorSpec>>& inputs,
                         const Attributes& attrs = {}) {
  std::vector<const TensorSpec*> pointers;
  for (const auto& input : inputs) {
    pointers.push_back(input ? &*input : nullptr);
  }
  auto outputs = infer_outputs(op, pointers, attrs);
  if (!outputs.ok()) {
    return outputs.status();
  }
  if (outputs->size() != 1) {
    return internal_error("expected one output, found ", outputs->size());
  }
  return (*outputs)[0];
}

void expect_spec(const Result<TensorSpec>& result, const TensorSpec& expected) {
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(dtype_name(result->dtype), dtype_name(expected.dtype));
  EXPECT_EQ(shape_string(result->shape), shape_string(expected.shape));
}

void expect_refused(const Result<TensorSpec>& result, std::string_view expected_piece) {
  ASSERT_FALSE(result.ok()) << "accepted, giving " << shape_string(result->shape);
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find(expected_piece), std::string::npos)
      << "'" << expected_piece << "' not in: " << result.status().message();
}

Attributes ints(std::string name, std::vector<int64_t> values) {
  return Attributes{{std::move(name), values}};
}

TEST(OpSetTest, TableIsInEnumOrderWithUniqueNames) {
  std::set<std::string_view> names;
  ASSERT_EQ(all_ops().size(), 26u);
  for (size_t i = 0; i < all_ops().size(); ++i) {
    const OpDef& def = all_ops()[i];
    EXPECT_EQ(static_cast<size_t>(def.kind), i);
    EXPECT_TRUE(names.insert(def.name).second) << def.name;
    auto found = find_op(def.name);
    ASSERT_TRUE(found.ok());
    EXPECT_EQ(*found, def.kind);
    EXPECT_EQ(op_name(def.kind), def.name);
  }
  EXPECT_EQ(op_name(OpKind::kKvCacheUpdate), "kv_cache_update");
  EXPECT_EQ(op_name(OpKind::kCast), "cast");
  EXPECT_EQ(op_name(OpKind::kSwiglu), "swiglu");
  EXPECT_EQ(op_name(OpKind::kMultiLinear), "multi_linear");
}

TEST(OpSetTest, FindOpListsTheKnownOps) {
  auto missing = find_op("matmul");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("unknown op 'matmul'"), std::string::npos);
  EXPECT_NE(missing.status().message().find("known: embedding, linear, rms_norm"), std::string::npos);
  EXPECT_NE(missing.status().message().find(
                "swiglu, multi_linear, linear_add, swiglu_linear, qkv_rope_cache, windowed_attention, softcap, geglu, "
                "geglu_linear)"),
            std::string::npos);
}

TEST(OpSetTest, ChecksArity) {
  expect_refused(infer(OpKind::kAdd, {f32({2})}), "add: expected 2 inputs, found 1");
  expect_refused(infer(OpKind::kLinear, {f32({2}), f32({2, 2}), f32({2}), f32({2})}),
                 "linear: expected 2 to 3 inputs, found 4");
  expect_refused(infer(OpKind::kConcat, {}, Attributes{{"axis", int64_t{0}}}),
                 "concat: expected 1 or more inputs, found 0");
  expect_refused(infer(OpKind::kRmsNorm, {f32({2}), std::nullopt}), "rms_norm: required input 1 is absent");
  expect_refused(infer(OpKind::kConcat, {f32({2}), std::nullopt}, Attributes{{"axis", int64_t{0}}}),
                 "concat: input 1 is absent");
  expect_refused(infer(OpKind::kSilu, {f32({2, -3})}), "silu: input 0 has an invalid shape [2,-3]");
}

TEST(OpSetTest, Embedding) {
  expect_spec(infer(OpKind::kEmbedding, {typed(DType::kF16, {100, 8}), typed(DType::kI32, {2, 5})}), f32({2, 5, 8}));
  expect_spec(infer(OpKind::kEmbedding, {typed(DType::kBF16, {10, 3}), typed(DType::kI64, {})}), f32({3}));
  expect_refused(infer(OpKind::kEmbedding, {f32({100, 8}), f32({2})}),
                 "embedding: ids: expected dtype i32 or i64, found f32");
  expect_refused(infer(OpKind::kEmbedding, {f32({100, 8, 2}), typed(DType::kI32, {2})}),
                 "table: expected rank 2, found shape [100,8,2]");
  expect_refused(infer(OpKind::kEmbedding, {typed(DType::kI8, {100, 8}), typed(DType::kI32, {2})}),
                 "table: expected dtype f32, f16, bf16, q8_0 or q4_0, found i8");
}

TEST(OpSetTest, BlockQuantizedMatricesAreWholeBlocksPerRow) {
  expect_spec(infer(OpKind::kEmbedding, {typed(DType::kQ8_0, {10, 64}), typed(DType::kI32, {3})}), f32({3, 64}));
  expect_spec(infer(OpKind::kLinear, {f32({2, 96}), typed(DType::kQ4_0, {5, 96})}), f32({2, 5}));
  expect_refused(infer(OpKind::kLinear, {f32({2, 48}), typed(DType::kQ8_0, {5, 48})}),
                 "linear: weight: q8_0 rows of 48 elements are not whole 32-element blocks");
  expect_refused(infer(OpKind::kEmbedding, {typed(DType::kQ4_0, {10, 40}), typed(DType::kI32, {3})}),
                 "table: q4_0 rows of 40 elements are not whole 32-element blocks");
  // Quantized vectors (norm weights, biases) are not accepted: only matrices streamed by row.
  expect_refused(infer(OpKind::kRmsNorm, {f32({2, 32}), typed(DType::kQ8_0, {32})}),
                 "weight: expected dtype f32, f16 or bf16, found q8_0");
}

TEST(OpSetTest, SwigluIsSiluOfTheGateTimesUp) {
  expect_spec(infer(OpKind::kSwiglu, {f32({1, 3, 8}), f32({1, 3, 8})}), f32({1, 3, 8}));
  expect_refused(infer(OpKind::kSwiglu, {f32({1, 3, 8}), f32({8})}),
                 "swiglu: up: expected the gate's shape [1,3,8], found [8]");
  expect_refused(infer(OpKind::kSwiglu, {typed(DType::kF16, {4}), f32({4})}), "gate: expected dtype f32, found f16");
}

TEST(OpSetTest, MultiLinearIsOneLinearPerWeight) {
  const Attributes two{{"parts", int64_t{2}}};
  const TensorSpec x = f32({3, 4}), q = typed(DType::kBF16, {6, 4}), k = typed(DType::kBF16, {2, 4});
  const TensorSpec q_bias = f32({6}), k_bias = f32({2});
  const TensorSpec* unbiased[] = {&x, &q, &k};
  auto outputs = infer_outputs(OpKind::kMultiLinear, unbiased, two);
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
  ASSERT_EQ(outputs->size(), 2u);
  EXPECT_EQ(shape_string((*outputs)[0].shape), "[3,6]");
  EXPECT_EQ(shape_string((*outputs)[1].shape), "[3,2]");
  const TensorSpec* biased[] = {&x, &q, &k, &q_bias, &k_bias};
  ASSERT_TRUE(infer_outputs(OpKind::kMultiLinear, biased, two).ok());
  // One bias short: neither "no biases" nor "one per weight".
  expect_refused(infer(OpKind::kMultiLinear, {x, q, k, q_bias}, two),
                 "attribute 'parts': expected the number of weights (the op has x, the weights and optionally one "
                 "bias each: 4 inputs), found 2");
  expect_refused(infer(OpKind::kMultiLinear, {x, q}, Attributes{{"parts", int64_t{0}}}), "found 0");
  // A hostile count from a program file: refused, never doubled past int64.
  expect_refused(infer(OpKind::kMultiLinear, {x, q}, Attributes{{"parts", int64_t{1} << 62}}),
                 "found 4611686018427387904");
  // Biases swapped: part 0's bias has part 1's width.
  expect_refused(infer(OpKind::kMultiLinear, {x, q, k, k_bias, q_bias}, two),
                 "multi_linear: part 0: bias: expected dimension 0 to be 6, found shape [2]");
  expect_refused(infer(OpKind::kMultiLinear, {x, q, f32({2, 5})}, two),
                 "part 1: weight: expected [out, 4] to match input [3,4], found [2,5]");
}

TEST(OpSetTest, LinearAddIsALinearPlusItsResidual) {
  const TensorSpec x = f32({1, 3, 4}), w = typed(DType::kBF16, {6, 4}), residual = f32({1, 3, 6});
  expect_spec(infer(OpKind::kLinearAdd, {x, w, residual}), f32({1, 3, 6}));
  expect_spec(infer(OpKind::kLinearAdd, {x, w, residual, f32({6})}), f32({1, 3, 6}));
  expect_spec(infer(OpKind::kLinearAdd, {x, w, residual, std::nullopt}), f32({1, 3, 6}));
  // No broadcast: the residual has the linear's output spec.
  expect_refused(infer(OpKind::kLinearAdd, {x, w, f32({6})}),
                 "linear_add: residual: expected the linear's output f32[1,3,6], found f32[6]");
  expect_refused(infer(OpKind::kLinearAdd, {x, w, residual, f32({4})}),
                 "bias: expected dimension 0 to be 6, found shape [4]");
  expect_refused(infer(OpKind::kLinearAdd, {x, w}), "linear_add: expected 3 to 4 inputs, found 2");
}

TEST(OpSetTest, SwigluLinearIsTwoLinearsOfOneShape) {
  const TensorSpec x = f32({1, 2, 4}), gate = typed(DType::kF16, {6, 4}), up = typed(DType::kF16, {6, 4});
  expect_spec(infer(OpKind::kSwigluLinear, {x, gate, up}), f32({1, 2, 6}));
  expect_refused(infer(OpKind::kSwigluLinear, {x, gate, f32({5, 4})}),
                 "swiglu_linear: up: expected the gate's output shape [1,2,6], found [1,2,5]");
  expect_refused(infer(OpKind::kSwigluLinear, {x, f32({6, 3}), up}),
                 "swiglu_linear: gate: weight: expected [out, 4] to match input [1,2,4], found [6,3]");
}

TEST(OpSetTest, Linear) {
  expect_spec(infer(OpKind::kLinear, {f32({2, 3, 4}), typed(DType::kF16, {5, 4})}), f32({2, 3, 5}));
  expect_spec(infer(OpKind::kLinear, {f32({4}), f32({5, 4}), f32({5})}), f32({5}));
  expect_spec(infer(OpKind::kLinear, {f32({1, 4}), f32({5, 4}), std::nullopt}), f32({1, 5}));
  expect_refused(infer(OpKind::kLinear, {f32({2, 4}), f32({5, 3})}),
                 "linear: weight: expected [out, 4] to match input [2,4], found [5,3]");
  expect_refused(infer(OpKind::kLinear, {f32({2, 4}), f32({5, 4}), f32({4})}),
                 "bias: expected dimension 0 to be 5, found shape [4]");
  expect_refused(infer(OpKind::kLinear, {typed(DType::kF16, {2, 4}), f32({5, 4})}),
                 "input: expected dtype f32, found f16");
  expect_refused(infer(OpKind::kLinear, {f32({}), f32({5, 4})}), "input: expected rank >= 1, found shape []");
}

TEST(OpSetTest, RmsNormAndLayerNorm) {
  expect_spec(infer(OpKind::kRmsNorm, {f32({2, 8}), typed(DType::kBF16, {8})}), f32({2, 8}));
  expect_spec(infer(OpKind::kRmsNorm, {f32({2, 8}), f32({8})}, Attributes{{"eps", 1e-5}}), f32({2, 8}));
  expect_refused(infer(OpKind::kRmsNorm, {f32({2, 8}), f32({7})}),
                 "rms_norm: weight: expected dimension 0 to be 8, found shape [7]");
  expect_refused(infer(OpKind::kRmsNorm, {f32({2, 8}), f32({8})}, Attributes{{"eps", -1.0}}),
                 "attribute 'eps': expected a value >= 0, found -1");
  expect_refused(infer(OpKind::kRmsNorm, {f32({2, 8}), f32({8})}, Attributes{{"eps", std::string("small")}}),
                 "attribute 'eps': expected float, found string");

  expect_spec(infer(OpKind::kLayerNorm, {f32({3, 1, 6}), f32({6}), f32({6})}), f32({3, 1, 6}));
  expect_spec(infer(OpKind::kLayerNorm, {f32({3, 6}), f32({6}), std::nullopt}), f32({3, 6}));
  expect_refused(infer(OpKind::kLayerNorm, {f32({3, 6}), f32({6}), f32({6, 1})}),
                 "layer_norm: bias: expected rank 1, found shape [6,1]");
}

TEST(OpSetTest, Rope) {
  const Attributes attrs{{"theta", 10000.0}};
  const TensorSpec positions = typed(DType::kI64, {3});
  expect_spec(infer(OpKind::kRope, {f32({1, 3, 2, 8}), positions}, attrs), f32({1, 3, 2, 8}));
  expect_spec(
      infer(OpKind::kRope, {f32({1, 3, 2, 8}), positions}, Attributes{{"theta", 1e4}, {"rotary_dim", int64_t{4}}}),
      f32({1, 3, 2, 8}));
  expect_refused(infer(OpKind::kRope, {f32({1, 3, 2, 8}), typed(DType::kI64, {4})}, attrs),
                 "rope: positions: expected dimension 0 to be 3, found shape [4]");
  expect_refused(infer(OpKind::kRope, {f32({3, 2, 8}), positions}, attrs),
                 "input [batch, seq, heads, head_dim]: expected rank 4");
  expect_refused(infer(OpKind::kRope, {f32({1, 3, 2, 8}), positions}), "rope: missing attribute 'theta'");
  expect_refused(
      infer(OpKind::kRope, {f32({1, 3, 2, 8}), positions}, Attributes{{"theta", 1e4}, {"rotary_dim", int64_t{10}}}),
      "attribute 'rotary_dim': expected an even value in [2, 8], found 10");
}

TEST(OpSetTest, Attention) {
  const TensorSpec cache = f32({1, 2, 16, 8});
  const TensorSpec positions = typed(DType::kI32, {3});
  expect_spec(infer(OpKind::kAttention, {f32({1, 3, 4, 8}), cache, cache, positions}), f32({1, 3, 4, 8}));
  const TensorSpec half_cache = typed(DType::kF16, {1, 2, 16, 8});
  expect_spec(
      infer(OpKind::kAttention, {f32({1, 3, 4, 8}), half_cache, half_cache, positions}, Attributes{{"scale", 0.125}}),
      f32({1, 3, 4, 8}));
  expect_refused(infer(OpKind::kAttention, {f32({1, 3, 3, 8}), cache, cache, positions}),
                 "query heads (3) must be a multiple of kv heads (2)");
  expect_refused(infer(OpKind::kAttention, {f32({1, 3, 4, 8}), cache, half_cache, positions}),
                 "value cache: expected the key cache's f32[1,2,16,8], found f16[1,2,16,8]");
  expect_refused(infer(OpKind::kAttention, {f32({1, 3, 4, 4}), cache, cache, positions}),
                 "does not match query [1,3,4,4] in batch or head_dim");
  expect_refused(infer(OpKind::kAttention, {f32({1, 3, 4, 8}), cache, cache, positions}, Attributes{{"scale", 0.0}}),
                 "attribute 'scale': expected a value > 0, found 0");
  expect_refused(infer(OpKind::kAttention, {f32({1, 3, 4, 8}), cache, cache, typed(DType::kF32, {3})}),
                 "positions: expected dtype i32 or i64, found f32");
}

// What the executor plans with comes from the OpDef: which input carries positions, which ops act
// row by row, and the attributes a kernel sees when the instance leaves them out.
TEST(OpSetTest, OpDefsSayWhichInputHoldsPositionsAndWhichOpsAreRowWise) {
  EXPECT_EQ(op_def(OpKind::kRope).positions_input, 1);
  EXPECT_EQ(op_def(OpKind::kAttention).positions_input, 3);
  EXPECT_EQ(op_def(OpKind::kKvCacheUpdate).positions_input, 2);
  EXPECT_EQ(op_def(OpKind::kQkvRopeCache).positions_input, static_cast<int>(qkv_rope_cache::kPositions));
  EXPECT_EQ(op_def(OpKind::kLinear).positions_input, kNoPositionsInput);
  EXPECT_TRUE(op_def(OpKind::kAttention).row_wise);
  EXPECT_TRUE(op_def(OpKind::kLinear).row_wise);
  // Rows mix: a transpose or softmax over another axis, a cache update writing slots by position.
  EXPECT_FALSE(op_def(OpKind::kTranspose).row_wise);
  EXPECT_FALSE(op_def(OpKind::kSoftmax).row_wise);
  EXPECT_FALSE(op_def(OpKind::kKvCacheUpdate).row_wise);
}

TEST(OpSetTest, DefaultAttributesAreWhatTheKernelsRead) {
  const TensorSpec q = f32({1, 2, 4, 16});
  const TensorSpec cache = f32({1, 2, 8, 16});
  const TensorSpec positions = typed(DType::kI64, {2});
  const TensorSpec* inputs[] = {&q, &cache, &cache, &positions};
  const Attributes filled = with_default_attributes(OpKind::kAttention, inputs, {});
  EXPECT_DOUBLE_EQ(*filled.get_float("scale"), 0.25);  // 1 / sqrt(16), as both attention kernels use
  EXPECT_DOUBLE_EQ(attention_default_scale(16), 0.25);
  const Attributes kept = with_default_attributes(OpKind::kAttention, inputs, {{"scale", 0.5}});
  EXPECT_DOUBLE_EQ(*kept.get_float("scale"), 0.5);

  const TensorSpec x = f32({1, 2, 3, 8});
  const TensorSpec* rope_inputs[] = {&x, &positions};
  const Attributes rope = with_default_attributes(OpKind::kRope, rope_inputs, {{"theta", 1e4}});
  EXPECT_EQ(*rope.get_int("rotary_dim"), 8);
  EXPECT_EQ(*rope.get_string("scaling"), "none");
  const TensorSpec* norm_inputs[] = {&x, &x};
  EXPECT_DOUBLE_EQ(*with_default_attributes(OpKind::kRmsNorm, norm_inputs, {}).get_float("eps"), kRmsNormDefaultEps);
  EXPECT_TRUE(with_default_attributes(OpKind::kAdd, norm_inputs, {}).entries().empty());
}

TEST(OpSetTest, WindowedAttentionIsAttentionWithAWindowAndASoftCap) {
  const TensorSpec cache = f32({1, 2, 16, 8});
  const TensorSpec positions = typed(DType::kI64, {3});
  const TensorSpec q = f32({1, 3, 4, 8});
  expect_spec(infer(OpKind::kWindowedAttention, {q, cache, cache, positions},
                    Attributes{{"window", int64_t{4}}, {"softcap", 50.0}}),
              q);
  expect_spec(infer(OpKind::kWindowedAttention, {q, cache, cache, positions}), q);
  expect_refused(infer(OpKind::kWindowedAttention, {q, cache, cache, positions}, Attributes{{"window", int64_t{-1}}}),
                 "attribute 'window': expected a value >= 0, found -1");
  expect_refused(infer(OpKind::kWindowedAttention, {q, cache, cache, positions}, Attributes{{"softcap", -2.0}}),
                 "attribute 'softcap': expected a finite value >= 0, found -2");
  expect_refused(infer(OpKind::kWindowedAttention, {f32({1, 3, 3, 8}), cache, cache, positions}),
                 "query heads (3) must be a multiple of kv heads (2)");
  const TensorSpec* inputs[] = {&q, &cache, &cache, &positions};
  const Attributes filled = with_default_attributes(OpKind::kWindowedAttention, inputs, {});
  EXPECT_EQ(*filled.get_int("window"), 0);
  EXPECT_DOUBLE_EQ(*filled.get_float("softcap"), 0.0);
  EXPECT_DOUBLE_EQ(*filled.get_float("scale"), attention_default_scale(8));
  EXPECT_EQ(op_def(OpKind::kWindowedAttention).positions_input, 3);
}

TEST(OpSetTest, SoftcapNeedsAPositiveCap) {
  expect_spec(infer(OpKind::kSoftcap, {f32({2, 5})}, Attributes{{"cap", 30.0}}), f32({2, 5}));
  expect_refused(infer(OpKind::kSoftcap, {f32({2, 5})}), "attribute 'cap'");
  expect_refused(infer(OpKind::kSoftcap, {f32({2, 5})}, Attributes{{"cap", 0.0}}),
                 "attribute 'cap': expected a finite value > 0, found 0");
  expect_refused(infer(OpKind::kSoftcap, {typed(DType::kF16, {2})}, Attributes{{"cap", 1.0}}),
                 "input: expected dtype f32, found f16");
}

TEST(OpSetTest, QkvRopeCacheProjectsRotatesAndUpdatesBothCaches) {
  const Attributes rope{{"theta", 10000.0}};
  const TensorSpec x = f32({1, 3, 8}), wq = typed(DType::kBF16, {16, 8}), wk = typed(DType::kBF16, {8, 8});
  const TensorSpec cache = typed(DType::kF16, {1, 2, 16, 4}), positions = typed(DType::kI64, {3});
  const TensorSpec* inputs[] = {&x, &wq, &wk, &wk, &cache, &cache, &positions};
  auto outputs = infer_outputs(OpKind::kQkvRopeCache, inputs, rope);
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
  ASSERT_EQ(outputs->size(), 3u);
  EXPECT_EQ(shape_string((*outputs)[0].shape), "[1,3,4,4]");
  EXPECT_EQ((*outputs)[1], cache);
  EXPECT_EQ((*outputs)[2], cache);
  const TensorSpec bq = f32({16}), bk = f32({8});
  const TensorSpec* biased[] = {&x, &wq, &wk, &wk, &cache, &cache, &positions, &bq, &bk, &bk};
  ASSERT_TRUE(infer_outputs(OpKind::kQkvRopeCache, biased, rope).ok());

  auto refused = [&](std::vector<const TensorSpec*> in, const Attributes& attrs, std::string_view piece) {
    auto result = infer_outputs(OpKind::kQkvRopeCache, in, attrs);
    ASSERT_FALSE(result.ok()) << piece;
    EXPECT_NE(result.status().message().find(piece), std::string::npos) << result.status().message();
  };
  refused({&x, &wq, &wk, &wk, &cache, &cache, &positions, &bq}, rope,
          "expected 7 inputs, 10 with the three biases, and 2 more with the q and k norms");
  const TensorSpec wide_k = typed(DType::kBF16, {9, 8});
  refused({&x, &wq, &wide_k, &wk, &cache, &cache, &positions}, rope,
          "k: expected kv_heads * head_dim = 8 outputs (the caches' [1,2,16,4]), found 9");
  const TensorSpec odd_q = typed(DType::kBF16, {10, 8});
  refused({&x, &odd_q, &wk, &wk, &cache, &cache, &positions}, rope,
          "q: 10 outputs are not whole heads of the caches' head_dim 4");
  const TensorSpec f32_cache = f32({1, 2, 16, 4});
  refused({&x, &wq, &wk, &wk, &cache, &f32_cache, &positions}, rope, "value cache: expected the key cache's f16");
  refused({&x, &wq, &wk, &wk, &cache, &cache, &positions}, {}, "theta");
}

TEST(OpSetTest, KvCacheUpdate) {
  const TensorSpec cache = typed(DType::kF16, {1, 2, 16, 8});
  const TensorSpec positions = typed(DType::kI64, {3});
  expect_spec(infer(OpKind::kKvCacheUpdate, {cache, f32({1, 3, 2, 8}), positions}), cache);
  expect_spec(
      infer(OpKind::kKvCacheUpdate, {cache, f32({1, 3, 2, 8}), positions}, Attributes{{"in_place", int64_t{0}}}),
      cache);
  expect_refused(infer(OpKind::kKvCacheUpdate, {cache, f32({1, 3, 4, 8}), positions}),
                 "kv_cache_update: rows [1,3,4,8] do not match cache [1,2,16,8]");
  expect_refused(
      infer(OpKind::kKvCacheUpdate, {cache, f32({1, 3, 2, 8}), positions}, Attributes{{"in_place", int64_t{2}}}),
      "attribute 'in_place': expected 0 or 1, found 2");
  expect_refused(infer(OpKind::kKvCacheUpdate, {typed(DType::kBF16, {1, 2, 16, 8}), f32({1, 3, 2, 8}), positions}),
                 "cache: expected dtype f32, f16 or q8_0, found bf16");
}

// (output, input) pairs, for comparison.
std::vector<std::pair<size_t, size_t>> updates_of(OpKind kind, const Attributes& attrs) {
  std::vector<std::pair<size_t, size_t>> pairs;
  for (const InPlaceUpdate& update : in_place_updates(kind, attrs)) {
    pairs.emplace_back(update.output, update.input);
  }
  return pairs;
}

TEST(OpSetTest, InPlaceUpdates) {
  using Pairs = std::vector<std::pair<size_t, size_t>>;
  EXPECT_EQ(updates_of(OpKind::kKvCacheUpdate, {}), (Pairs{{0, 0}}));
  EXPECT_EQ(updates_of(OpKind::kKvCacheUpdate, Attributes{{"in_place", int64_t{1}}}), (Pairs{{0, 0}}));
  EXPECT_EQ(updates_of(OpKind::kKvCacheUpdate, Attributes{{"in_place", int64_t{0}}}), Pairs{});
  EXPECT_EQ(updates_of(OpKind::kKvCacheUpdate, Attributes{{"in_place", 1.0}}), Pairs{});
  EXPECT_EQ(updates_of(OpKind::kQkvRopeCache, {}), (Pairs{{1, 4}, {2, 5}}));
  for (const OpDef& def : all_ops()) {
    if (def.kind != OpKind::kKvCacheUpdate && def.kind != OpKind::kQkvRopeCache) {
      EXPECT_EQ(updates_of(def.kind, {}), Pairs{}) << def.name;
    }
  }
}

TEST(OpSetTest, BinaryOpsBroadcastLikeNumPy) {
  struct Case {
    Shape a;
    Shape b;
    Shape out;
  };
  const std::vector<Case> cases = {
      {{2, 3}, {2, 3}, {2, 3}},
      {{2, 3}, {3}, {2, 3}},
      {{2, 1, 4}, {3, 1}, {2, 3, 4}},
      {{}, {2, 3}, {2, 3}},
      {{1}, {5}, {5}},
      {{0, 1}, {1, 5}, {0, 5}},
      {{4, 1, 1}, {1, 6, 1}, {4, 6, 1}},
      {{1, 1}, {1, 1, 1}, {1, 1, 1}},
  };
  for (const Case& c : cases) {
    for (OpKind op : {OpKind::kAdd, OpKind::kMul}) {
      SCOPED_TRACE(std::string(op_name(op)) + " " + shape_string(c.a) + " " + shape_string(c.b));
      expect_spec(infer(op, {f32(c.a), f32(c.b)}), f32(c.out));
      expect_spec(infer(op, {f32(c.b), f32(c.a)}), f32(c.out));
    }
  }
  expect_refused(infer(OpKind::kAdd, {f32({2, 3}), f32({4})}), "add: shapes [2,3] and [4] do not broadcast");
  expect_refused(infer(OpKind::kMul, {f32({2, 3}), f32({3, 3})}), "mul: shapes [2,3] and [3,3] do not broadcast");
  expect_refused(infer(OpKind::kMul, {f32({0}), f32({2})}), "shapes [0] and [2] do not broadcast");
  expect_refused(infer(OpKind::kAdd, {f32({2}), typed(DType::kF16, {2})}), "add: rhs: expected dtype f32, found f16");
}

TEST(OpSetTest, UnaryOps) {
  expect_spec(infer(OpKind::kSilu, {f32({2, 7})}), f32({2, 7}));
  expect_refused(infer(OpKind::kSilu, {typed(DType::kI32, {2})}), "silu: input: expected dtype f32, found i32");
  expect_spec(infer(OpKind::kGelu, {f32({3})}), f32({3}));
  expect_spec(infer(OpKind::kGelu, {f32({3})}, Attributes{{"approximate", std::string("tanh")}}), f32({3}));
  expect_refused(infer(OpKind::kGelu, {f32({3})}, Attributes{{"approximate", std::string("fast")}}),
                 "gelu: attribute 'approximate': expected none or tanh, found 'fast'");
  expect_spec(infer(OpKind::kSoftmax, {f32({2, 5})}), f32({2, 5}));
  expect_spec(infer(OpKind::kSoftmax, {f32({2, 5})}, Attributes{{"axis", int64_t{-2}}}), f32({2, 5}));
  expect_refused(infer(OpKind::kSoftmax, {f32({2, 5})}, Attributes{{"axis", int64_t{2}}}),
                 "softmax: attribute 'axis': axis 2 is out of range for rank 2");
  expect_refused(infer(OpKind::kSoftmax, {f32({})}), "softmax: input: expected rank >= 1, found shape []");
}

TEST(OpSetTest, Reshape) {
  const TensorSpec x = f32({2, 3, 4});
  expect_spec(infer(OpKind::kReshape, {x}, ints("shape", {4, -1})), f32({4, 6}));
  expect_spec(infer(OpKind::kReshape, {x}, ints("shape", {-1})), f32({24}));
  expect_spec(infer(OpKind::kReshape, {x}, ints("shape", {6, -1, 2})), f32({6, 2, 2}));
  expect_spec(infer(OpKind::kReshape, {x}, ints("shape", {1, 24, 1})), f32({1, 24, 1}));
  expect_spec(infer(OpKind::kReshape, {typed(DType::kI64, {6})}, ints("shape", {2, 3})), typed(DType::kI64, {2, 3}));
  expect_spec(infer(OpKind::kReshape, {f32({1})}, ints("shape", {})), f32({}));
  // Empty tensors: a zero dimension makes the element count 0 however large the others are.
  expect_spec(infer(OpKind::kReshape, {f32({0, 4})}, ints("shape", {5, 0})), f32({5, 0}));
  expect_spec(infer(OpKind::kReshape, {f32({0, 4})}, ints("shape", {3, -1})), f32({3, 0}));
  expect_spec(infer(OpKind::kReshape, {f32({0, 4})}, ints("shape", {int64_t{1} << 40, int64_t{1} << 40, 0})),
              f32({int64_t{1} << 40, int64_t{1} << 40, 0}));

  expect_refused(infer(OpKind::kReshape, {x}, ints("shape", {-1, -1})),
                 "attribute 'shape': more than one -1 in [-1,-1]");
  expect_refused(infer(OpKind::kReshape, {x}, ints("shape", {-2, 12})), "negative dimension in [-2,12]");
  expect_refused(infer(OpKind::kReshape, {x}, ints("shape", {5, -1})), "cannot infer -1 in [5,-1] for input [2,3,4]");
  expect_refused(infer(OpKind::kReshape, {f32({0, 4})}, ints("shape", {0, -1})), "cannot infer -1 in [0,-1]");
  expect_refused(infer(OpKind::kReshape, {x}, ints("shape", {5, 5})), "[5,5] has 25 elements, input [2,3,4] has 24");
  expect_refused(infer(OpKind::kReshape, {x}, ints("shape", {int64_t{1} << 40, int64_t{1} << 40})),
                 "does not match input [2,3,4]");
  expect_refused(infer(OpKind::kReshape, {x}), "reshape: missing attribute 'shape'");
}

TEST(OpSetTest, Transpose) {
  expect_spec(infer(OpKind::kTranspose, {f32({2, 3, 4})}, ints("perm", {2, 0, 1})), f32({4, 2, 3}));
  expect_spec(infer(OpKind::kTranspose, {typed(DType::kF16, {5, 7})}, ints("perm", {1, 0})),
              typed(DType::kF16, {7, 5}));
  expect_refused(infer(OpKind::kTranspose, {f32({2, 3, 4})}, ints("perm", {0, 0, 1})),
                 "attribute 'perm': [0,0,1] is not a permutation");
  expect_refused(infer(OpKind::kTranspose, {f32({2, 3, 4})}, ints("perm", {0, 3, 1})), "is not a permutation");
  expect_refused(infer(OpKind::kTranspose, {f32({2, 3, 4})}, ints("perm", {1, 0})),
                 "attribute 'perm': [1,0] does not match rank 3");
}

Attributes slice_attrs(int64_t axis, int64_t start, int64_t end, std::optional<int64_t> step = std::nullopt) {
  Attributes attrs{{"axis", axis}, {"start", start}, {"end", end}};
  if (step) {
    attrs.set("step", *step);
  }
  return attrs;
}

TEST(OpSetTest, Slice) {
  const TensorSpec x = f32({4, 10});
  expect_spec(infer(OpKind::kSlice, {x}, slice_attrs(1, 2, 9)), f32({4, 7}));
  expect_spec(infer(OpKind::kSlice, {x}, slice_attrs(1, 2, 9, 3)), f32({4, 3}));  // 2, 5, 8
  expect_spec(infer(OpKind::kSlice, {x}, slice_attrs(1, 2, 8, 3)), f32({4, 2}));  // 2, 5
  expect_spec(infer(OpKind::kSlice, {x}, slice_attrs(-1, 0, 10)), f32({4, 10}));
  expect_spec(infer(OpKind::kSlice, {x}, slice_attrs(0, 4, 4)), f32({0, 10}));
  expect_spec(infer(OpKind::kSlice, {x}, slice_attrs(1, 0, 10, std::numeric_limits<int64_t>::max())), f32({4, 1}));
  expect_spec(infer(OpKind::kSlice, {typed(DType::kI32, {6})}, slice_attrs(0, 1, 3)), typed(DType::kI32, {2}));

  expect_refused(infer(OpKind::kSlice, {x}, slice_attrs(1, 2, 11)), "slice [2, 11) is outside axis 1 of [4,10]");
  expect_refused(infer(OpKind::kSlice, {x}, slice_attrs(1, 5, 4)), "slice [5, 4) is outside axis 1");
  expect_refused(infer(OpKind::kSlice, {x}, slice_attrs(0, -1, 2)), "slice [-1, 2) is outside axis 0");
  expect_refused(infer(OpKind::kSlice, {x}, slice_attrs(0, 0, 2, 0)),
                 "attribute 'step': expected a value > 0, found 0");
  expect_refused(infer(OpKind::kSlice, {x}, slice_attrs(2, 0, 1)),
                 "attribute 'axis': axis 2 is out of range for rank 2");
  expect_refused(infer(OpKind::kSlice, {x}, Attributes{{"axis", int64_t{0}}, {"end", int64_t{1}}}),
                 "missing attribute 'start'");
}

TEST(OpSetTest, Concat) {
  const Attributes last{{"axis", int64_t{-1}}};
  expect_spec(infer(OpKind::kConcat, {f32({2, 3}), f32({2, 5})}, Attributes{{"axis", int64_t{1}}}), f32({2, 8}));
  expect_spec(infer(OpKind::kConcat, {f32({2, 3}), f32({2, 5}), f32({2, 1})}, last), f32({2, 9}));
  expect_spec(infer(OpKind::kConcat, {typed(DType::kI64, {4})}, Attributes{{"axis", int64_t{0}}}),
              typed(DType::kI64, {4}));
  expect_refused(infer(OpKind::kConcat, {f32({2, 3}), f32({3, 5})}, last),
                 "concat: input 1 f32[3,5] cannot be concatenated with f32[2,3] along axis 1");
  expect_refused(infer(OpKind::kConcat, {f32({2, 3}), typed(DType::kF16, {2, 3})}, last),
                 "input 1 f16[2,3] cannot be concatenated with f32[2,3]");
  expect_refused(infer(OpKind::kConcat, {f32({2, 3}), f32({2, 3, 1})}, last), "input 1 f32[2,3,1] cannot be");
  const int64_t big = int64_t{1} << 62;
  expect_refused(infer(OpKind::kConcat, {typed(DType::kU8, {big}), typed(DType::kU8, {big})}, last),
                 "input 1: the concatenated axis 0 overflows 64 bits");
  expect_refused(infer(OpKind::kConcat, {f32({2})}), "concat: missing attribute 'axis'");
}

TEST(OpSetTest, Cast) {
  expect_spec(infer(OpKind::kCast, {f32({2, 3})}, Attributes{{"dtype", std::string("f16")}}),
              typed(DType::kF16, {2, 3}));
  expect_spec(infer(OpKind::kCast, {typed(DType::kBF16, {4})}, Attributes{{"dtype", std::string("i64")}}),
              typed(DType::kI64, {4}));
  expect_refused(infer(OpKind::kCast, {f32({2})}, Attributes{{"dtype", std::string("q8_0")}}),
                 "cast: attribute 'dtype': expected f32, f16, bf16, i32 or i64, found 'q8_0'");
  expect_refused(infer(OpKind::kCast, {f32({2})}, Attributes{{"dtype", std::string("float")}}), "found 'float'");
  expect_refused(infer(OpKind::kCast, {typed(DType::kBool, {2})}, Attributes{{"dtype", std::string("f32")}}),
                 "input: expected dtype f32, f16, bf16, i32 or i64, found bool");
}

}  // namespace
}  // namespace staticlm
