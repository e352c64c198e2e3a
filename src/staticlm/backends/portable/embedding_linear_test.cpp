// SPDX-License-Identifier: Apache-2.0
// embedding and linear against double-precision references on seeded random data.
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "staticlm/backends/portable/kernel_test_util.h"
#include "staticlm/backends/portable/register.h"
#include "staticlm/runtime/kernel_registry.h"

namespace staticlm::portable_test {
namespace {

struct WeightCase {
  DType weight;
  DType index;
};

class EmbeddingTest : public ::testing::TestWithParam<WeightCase> {};

TEST_P(EmbeddingTest, GathersRowsOfTheTable) {
  std::mt19937 rng(11);
  const int64_t vocab = 37;
  const int64_t width = 12;
  Tensor table = random_tensor(GetParam().weight, {vocab, width}, rng);
  const std::vector<int64_t> id_values = {0, 36, 5, 5, 17, 1};
  Tensor ids = index_tensor(GetParam().index, id_values);
  // Two-dimensional ids [2, 3] exercise the [..., D] output shape.
  Tensor ids_2d = new_tensor(GetParam().index, {2, 3});
  std::memcpy(ids_2d.bytes().data(), ids.bytes().data(), ids.nbytes());

  auto outputs = run_op(OpKind::kEmbedding, {&table, &ids_2d});
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
  ASSERT_EQ((*outputs)[0].shape(), (Shape{2, 3, width}));
  const std::vector<double> table_values = to_doubles(table);
  std::vector<double> want;
  for (int64_t id : id_values) {
    for (int64_t d = 0; d < width; ++d) {
      want.push_back(table_values[static_cast<size_t>(id * width + d)]);
    }
  }
  expect_close((*outputs)[0], want, 0.0, 0.0);
}

TEST_P(EmbeddingTest, RefusesAnIdOutsideTheTable) {
  std::mt19937 rng(12);
  Tensor table = random_tensor(GetParam().weight, {32000, 4}, rng);
  Tensor ids = index_tensor(GetParam().index, {1, 2, 3, 70000});
  auto outputs = run_op(OpKind::kEmbedding, {&table, &ids});
  ASSERT_FALSE(outputs.ok());
  EXPECT_EQ(outputs.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(outputs.status().message().find("embedding: token id 70000 at index 3 is outside [0, 32000)"),
            std::string::npos)
      << outputs.status().message();

  Tensor negative = index_tensor(GetParam().index, {-1});
  auto refused = run_op(OpKind::kEmbedding, {&table, &negative});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("token id -1 at index 0"), std::string::npos) << refused.status().message();
}

// A left-padded chunk's padding rows are not gathered (their outputs are unspecified); a
// call whose ids are not the chunk's rows gathers them all.
TEST_P(EmbeddingTest, LeavesTheChunksPaddingRowsUnwritten) {
  std::mt19937 rng(13);
  KernelRegistry registry;
  ASSERT_TRUE(register_portable_kernels(registry).ok());
  const int64_t width = 12;
  Tensor table = random_tensor(GetParam().weight, {37, width}, rng);
  const std::vector<int64_t> id_values = {3, 3, 0, 36, 5};
  Tensor ids = index_tensor(GetParam().index, id_values);
  auto outputs = run_op_with(registry, CpuFeatures(), OpKind::kEmbedding, {&table, &ids}, {}, nullptr, {5, 2, -123.0f});
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
  const std::vector<double> table_values = to_doubles(table);
  std::vector<double> want(static_cast<size_t>(2 * width), -123.0);
  for (size_t i = 2; i < id_values.size(); ++i) {
    for (int64_t d = 0; d < width; ++d) {
      want.push_back(table_values[static_cast<size_t>(id_values[i] * width + d)]);
    }
  }
  expect_close((*outputs)[0], want, 0.0, 0.0);

  auto all = run_op_with(registry, CpuFeatures(), OpKind::kEmbedding, {&table, &ids}, {}, nullptr, {6, 2, -123.0f});
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  EXPECT_EQ((*all)[0].data<float>()[0], static_cast<float>(table_values[3 * width]));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, EmbeddingTest,
                         ::testing::Values(WeightCase{DType::kF32, DType::kI64}, WeightCase{DType::kF16, DType::kI32},
                                           WeightCase{DType::kBF16, DType::kI64}));

struct LinearCase {
  DType weight;
  Shape x_shape;
  int64_t out_features;
  bool bias;
};

class LinearTest : public ::testing::TestWithParam<LinearCase> {};

TEST_P(LinearTest, MatchesDoubleReference) {
  const LinearCase& param = GetParam();
  std::mt19937 rng(21);
  const int64_t inner = param.x_shape.back();
  Tensor x = random_tensor(DType::kF32, param.x_shape, rng);
  Tensor weight = random_tensor(param.weight, {param.out_features, inner}, rng);
  Tensor bias = param.bias ? random_tensor(param.weight, {param.out_features}, rng) : Tensor();

  auto outputs = param.bias ? run_op(OpKind::kLinear, {&x, &weight, &bias}) : run_op(OpKind::kLinear, {&x, &weight});
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
  Shape want_shape = param.x_shape;
  want_shape.back() = param.out_features;
  ASSERT_EQ((*outputs)[0].shape(), want_shape);

  const std::vector<double> xs = to_doubles(x);
  const std::vector<double> ws = to_doubles(weight);
  const std::vector<double> bs = param.bias ? to_doubles(bias) : std::vector<double>();
  const int64_t rows = x.numel() / inner;
  std::vector<double> want(static_cast<size_t>(rows * param.out_features));
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t n = 0; n < param.out_features; ++n) {
      double sum = param.bias ? bs[static_cast<size_t>(n)] : 0.0;
      for (int64_t k = 0; k < inner; ++k) {
        sum += xs[static_cast<size_t>(m * inner + k)] * ws[static_cast<size_t>(n * inner + k)];
      }
      want[static_cast<size_t>(m * param.out_features + n)] = sum;
    }
  }
  // f32 accumulation over K terms of magnitude <= 1: allow an absolute error that grows with K.
  expect_close((*outputs)[0], want, 1e-5, 1e-7 * static_cast<double>(inner));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, LinearTest,
    ::testing::Values(LinearCase{DType::kF32, {1, 7}, 5, false}, LinearCase{DType::kF32, {2, 3, 16}, 9, true},
                      LinearCase{DType::kF16, {4, 33}, 17, true}, LinearCase{DType::kBF16, {3, 1, 64}, 40, false},
                      LinearCase{DType::kF32, {64, 576}, 1536, true}, LinearCase{DType::kF16, {1, 576}, 1536, false}));

TEST(LinearTest, AbsentOptionalBiasAddsNothing) {
  std::mt19937 rng(22);
  Tensor x = random_tensor(DType::kF32, {3, 8}, rng);
  Tensor weight = random_tensor(DType::kF32, {5, 8}, rng);
  auto with_null = run_op(OpKind::kLinear, {&x, &weight, nullptr});
  auto without = run_op(OpKind::kLinear, {&x, &weight});
  ASSERT_TRUE(with_null.ok()) << with_null.status().to_string();
  ASSERT_TRUE(without.ok()) << without.status().to_string();
  expect_close((*with_null)[0], to_doubles((*without)[0]), 0.0, 0.0);
}

// The fused op is its parts: each output equals the linear of x with that part's weight and bias.
TEST(MultiLinearTest, EachOutputIsThePartsLinear) {
  std::mt19937 rng(23);
  Tensor x = random_tensor(DType::kF32, {2, 3, 24}, rng);
  Tensor q = random_tensor(DType::kBF16, {12, 24}, rng);
  Tensor k = random_tensor(DType::kF32, {4, 24}, rng);
  Tensor q_bias = random_tensor(DType::kF32, {12}, rng);
  Tensor k_bias = random_tensor(DType::kF16, {4}, rng);
  for (const bool biased : {false, true}) {
    SCOPED_TRACE(biased ? "biases" : "no biases");
    std::vector<Tensor*> inputs = {&x, &q, &k};
    if (biased) {
      inputs.insert(inputs.end(), {&q_bias, &k_bias});
    }
    auto fused = run_op(OpKind::kMultiLinear, inputs, Attributes{{"parts", int64_t{2}}});
    ASSERT_TRUE(fused.ok()) << fused.status().to_string();
    ASSERT_EQ(fused->size(), 2u);
    auto want_q = biased ? run_op(OpKind::kLinear, {&x, &q, &q_bias}) : run_op(OpKind::kLinear, {&x, &q});
    auto want_k = biased ? run_op(OpKind::kLinear, {&x, &k, &k_bias}) : run_op(OpKind::kLinear, {&x, &k});
    ASSERT_TRUE(want_q.ok() && want_k.ok());
    EXPECT_EQ((*fused)[0].shape(), (Shape{2, 3, 12}));
    EXPECT_EQ((*fused)[1].shape(), (Shape{2, 3, 4}));
    expect_close((*fused)[0], to_doubles((*want_q)[0]), 0.0, 0.0);
    expect_close((*fused)[1], to_doubles((*want_k)[0]), 0.0, 0.0);
  }
}

}  // namespace
}  // namespace staticlm::portable_test
