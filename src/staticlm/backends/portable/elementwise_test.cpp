// SPDX-License-Identifier: Apache-2.0
// add / mul with broadcasting, silu, gelu and softmax against double-precision references.
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "staticlm/backends/portable/kernel_test_util.h"

namespace staticlm::portable_test {
namespace {

// NumPy broadcasting written out: the value of `shape`'s tensor at output index `index`.
double broadcast_at(const std::vector<double>& values, const Shape& shape, const Shape& out_shape,
                    const std::vector<int64_t>& index) {
  int64_t offset = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    const size_t out_axis = out_shape.size() - shape.size() + i;
    const int64_t coordinate = shape[i] == 1 ? 0 : index[out_axis];
    offset = offset * shape[i] + coordinate;
  }
  return values[static_cast<size_t>(offset)];
}

struct BinaryCase {
  Shape lhs;
  Shape rhs;
  Shape out;
};

class BinaryTest : public ::testing::TestWithParam<BinaryCase> {};

TEST_P(BinaryTest, AddAndMulBroadcast) {
  const BinaryCase& c = GetParam();
  std::mt19937 rng(71);
  Tensor lhs = random_tensor(DType::kF32, c.lhs, rng, -2.0f, 2.0f);
  Tensor rhs = random_tensor(DType::kF32, c.rhs, rng, -2.0f, 2.0f);
  const std::vector<double> a = to_doubles(lhs);
  const std::vector<double> b = to_doubles(rhs);
  for (OpKind op : {OpKind::kAdd, OpKind::kMul}) {
    SCOPED_TRACE(std::string(op_name(op)));
    auto outputs = run_op(op, {&lhs, &rhs});
    ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
    ASSERT_EQ((*outputs)[0].shape(), c.out);
    std::vector<double> want;
    std::vector<int64_t> index(c.out.size(), 0);
    for (int64_t flat = 0; flat < num_elements(c.out); ++flat) {
      int64_t rest = flat;
      for (size_t axis = c.out.size(); axis-- > 0;) {
        index[axis] = rest % c.out[axis];
        rest /= c.out[axis];
      }
      const double x = broadcast_at(a, c.lhs, c.out, index);
      const double y = broadcast_at(b, c.rhs, c.out, index);
      want.push_back(op == OpKind::kAdd ? x + y : x * y);
    }
    expect_close((*outputs)[0], want);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, BinaryTest,
                         ::testing::Values(BinaryCase{{2, 3, 4}, {4}, {2, 3, 4}},
                                           BinaryCase{{2, 1, 4}, {3, 1}, {2, 3, 4}}, BinaryCase{{5, 6}, {5, 6}, {5, 6}},
                                           BinaryCase{{1}, {2, 3}, {2, 3}}, BinaryCase{{3, 1, 2}, {1, 4, 1}, {3, 4, 2}},
                                           BinaryCase{{}, {2, 2}, {2, 2}}, BinaryCase{{}, {}, {}}));

double reference_gelu_erf(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}
double reference_gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}
double reference_silu(double x) {
  return x / (1.0 + std::exp(-x));
}

TEST(UnaryTest, SiluAndBothGelus) {
  std::mt19937 rng(72);
  Tensor x = random_tensor(DType::kF32, {3, 50}, rng, -8.0f, 8.0f);
  // Large magnitudes: exp must not turn these into NaN.
  x.data<float>()[0] = -100.0f;
  x.data<float>()[1] = 100.0f;
  x.data<float>()[2] = 0.0f;
  const std::vector<double> xs = to_doubles(x);
  struct Case {
    OpKind op;
    Attributes attrs;
    double (*reference)(double);
  };
  const std::vector<Case> cases = {
      {OpKind::kSilu, {}, reference_silu},
      {OpKind::kGelu, {}, reference_gelu_erf},
      {OpKind::kGelu, Attributes{{"approximate", std::string("none")}}, reference_gelu_erf},
      {OpKind::kGelu, Attributes{{"approximate", std::string("tanh")}}, reference_gelu_tanh},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(op_name(c.op)) + " " + *c.attrs.get_string_or("approximate", "(default)"));
    auto outputs = run_op(c.op, {&x}, c.attrs);
    ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
    std::vector<double> want;
    for (double value : xs) {
      want.push_back(c.reference(value));
    }
    expect_close((*outputs)[0], want);
  }
}

TEST(UnaryTest, SoftcapIsCapTimesTanhOfXOverCap) {
  std::mt19937 rng(73);
  Tensor x = random_tensor(DType::kF32, {2, 33}, rng, -20.0f, 20.0f);
  x.data<float>()[0] = -1e30f;  // saturates at -cap, never NaN
  const std::vector<double> xs = to_doubles(x);
  for (double cap : {0.5, 3.0, 30.0}) {
    SCOPED_TRACE(str_cat("cap ", cap));
    auto outputs = run_op(OpKind::kSoftcap, {&x}, {{"cap", cap}});
    ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
    std::vector<double> want;
    for (double value : xs) {
      want.push_back(cap * std::tanh(value / cap));
    }
    expect_close((*outputs)[0], want);
  }
  auto refused = run_op(OpKind::kSoftcap, {&x}, {{"cap", 0.0}});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("attribute 'cap': expected a finite value > 0, found 0"), std::string::npos)
      << refused.status().message();
}

struct SoftmaxCase {
  Shape shape;
  int64_t axis;
  float low;
  float high;
};

class SoftmaxTest : public ::testing::TestWithParam<SoftmaxCase> {};

TEST_P(SoftmaxTest, MatchesReference) {
  const SoftmaxCase& c = GetParam();
  std::mt19937 rng(73);
  Tensor x = random_tensor(DType::kF32, c.shape, rng, c.low, c.high);
  auto outputs = run_op(OpKind::kSoftmax, {&x}, Attributes{{"axis", c.axis}});
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();

  const std::vector<double> xs = to_doubles(x);
  const auto rank = static_cast<int64_t>(c.shape.size());
  const auto axis = static_cast<size_t>(c.axis < 0 ? c.axis + rank : c.axis);
  int64_t inner = 1;
  for (size_t i = axis + 1; i < c.shape.size(); ++i) {
    inner *= c.shape[i];
  }
  const int64_t length = c.shape[axis];
  std::vector<double> want(xs.size());
  for (int64_t start = 0; start < static_cast<int64_t>(xs.size()); ++start) {
    if ((start / inner) % length != 0) {
      continue;  // not the first element of a lane
    }
    double max_value = -std::numeric_limits<double>::infinity();
    for (int64_t a = 0; a < length; ++a) {
      max_value = std::max(max_value, xs[static_cast<size_t>(start + a * inner)]);
    }
    double total = 0.0;
    for (int64_t a = 0; a < length; ++a) {
      total += std::exp(xs[static_cast<size_t>(start + a * inner)] - max_value);
    }
    for (int64_t a = 0; a < length; ++a) {
      const auto i = static_cast<size_t>(start + a * inner);
      want[i] = std::exp(xs[i] - max_value) / total;
    }
  }
  expect_close((*outputs)[0], want);
}

INSTANTIATE_TEST_SUITE_P(Axes, SoftmaxTest,
                         ::testing::Values(SoftmaxCase{{4, 10}, -1, -3.0f, 3.0f},
                                           SoftmaxCase{{3, 5, 2}, 1, -3.0f, 3.0f}, SoftmaxCase{{6, 3}, 0, -3.0f, 3.0f},
                                           SoftmaxCase{{2, 16}, -1, 1000.0f, 1010.0f},    // exp would overflow
                                           SoftmaxCase{{2, 16}, -1, -1010.0f, -1000.0f},  // exp would underflow
                                           SoftmaxCase{{7}, 0, -50.0f, 50.0f}));

}  // namespace
}  // namespace staticlm::portable_test
