// SPDX-License-Identifier: Apache-2.0
// rms_norm and layer_norm against double-precision references, for f32, f16 and bf16 weights.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "staticlm/backends/portable/kernel_test_util.h"

namespace staticlm::portable_test {
namespace {

struct NormCase {
  DType weight;
  Shape shape;
  double eps;
};

class NormTest : public ::testing::TestWithParam<NormCase> {
 protected:
  // Random x of the case's shape in [low, high) and a weight around 1, from `seed`.
  void draw(uint32_t seed, float low, float high) {
    rng.seed(seed);
    width = GetParam().shape.back();
    x = random_tensor(DType::kF32, GetParam().shape, rng, low, high);
    weight = random_tensor(GetParam().weight, {width}, rng, 0.5f, 1.5f);
  }
  std::mt19937 rng;
  int64_t width = 0;
  Tensor x;
  Tensor weight;
};

TEST_P(NormTest, RmsNormMatchesReference) {
  const NormCase& param = GetParam();
  draw(31, -3.0f, 3.0f);
  auto outputs = run_op(OpKind::kRmsNorm, {&x, &weight}, Attributes{{"eps", param.eps}});
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();

  const std::vector<double> xs = to_doubles(x);
  const std::vector<double> ws = to_doubles(weight);
  std::vector<double> want(xs.size());
  for (size_t row = 0; row < xs.size() / width; ++row) {
    double sum_squares = 0.0;
    for (int64_t d = 0; d < width; ++d) {
      sum_squares += xs[row * width + d] * xs[row * width + d];
    }
    const double inv_rms = 1.0 / std::sqrt(sum_squares / static_cast<double>(width) + param.eps);
    for (int64_t d = 0; d < width; ++d) {
      want[row * width + d] = xs[row * width + d] * inv_rms * ws[static_cast<size_t>(d)];
    }
  }
  expect_close((*outputs)[0], want);
}

TEST_P(NormTest, LayerNormMatchesReference) {
  const NormCase& param = GetParam();
  draw(32, -2.0f, 4.0f);
  Tensor bias = random_tensor(param.weight, {width}, rng);
  for (bool with_bias : {true, false}) {
    SCOPED_TRACE(with_bias ? "with bias" : "without bias");
    auto outputs = with_bias ? run_op(OpKind::kLayerNorm, {&x, &weight, &bias}, Attributes{{"eps", param.eps}})
                             : run_op(OpKind::kLayerNorm, {&x, &weight}, Attributes{{"eps", param.eps}});
    ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();

    const std::vector<double> xs = to_doubles(x);
    const std::vector<double> ws = to_doubles(weight);
    const std::vector<double> bs = to_doubles(bias);
    std::vector<double> want(xs.size());
    for (size_t row = 0; row < xs.size() / width; ++row) {
      double mean = 0.0;
      for (int64_t d = 0; d < width; ++d) {
        mean += xs[row * width + d];
      }
      mean /= static_cast<double>(width);
      double variance = 0.0;
      for (int64_t d = 0; d < width; ++d) {
        variance += (xs[row * width + d] - mean) * (xs[row * width + d] - mean);
      }
      variance /= static_cast<double>(width);
      for (int64_t d = 0; d < width; ++d) {
        want[row * width + d] =
            (xs[row * width + d] - mean) / std::sqrt(variance + param.eps) * ws[static_cast<size_t>(d)] +
            (with_bias ? bs[static_cast<size_t>(d)] : 0.0);
      }
    }
    expect_close((*outputs)[0], want);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, NormTest,
                         ::testing::Values(NormCase{DType::kF32, {1, 8}, 1e-6}, NormCase{DType::kF32, {2, 5, 64}, 1e-5},
                                           NormCase{DType::kF16, {3, 96}, 1e-6},
                                           NormCase{DType::kBF16, {4, 1, 128}, 1e-5}, NormCase{DType::kF32, {7}, 0.5}));

TEST(NormTest, DefaultEpsilonsFollowTheOpTable) {
  // With values this small, mean(x^2) and the variance are 1e-6, so the default eps (1e-6 for
  // rms_norm, 1e-5 for layer_norm) visibly changes the scale.
  Tensor x = f32_tensor({1, 2}, {1e-3f, -1e-3f});
  Tensor weight = f32_tensor({2}, {1.0f, 1.0f});
  auto rms = run_op(OpKind::kRmsNorm, {&x, &weight});
  ASSERT_TRUE(rms.ok()) << rms.status().to_string();
  const double inv_rms = 1.0 / std::sqrt(1e-6 + 1e-6);
  expect_close((*rms)[0], {1e-3 * inv_rms, -1e-3 * inv_rms});

  auto layer = run_op(OpKind::kLayerNorm, {&x, &weight});
  ASSERT_TRUE(layer.ok()) << layer.status().to_string();
  const double inv_std = 1.0 / std::sqrt(1e-6 + 1e-5);
  expect_close((*layer)[0], {1e-3 * inv_std, -1e-3 * inv_std});
}

}  // namespace
}  // namespace staticlm::portable_test
