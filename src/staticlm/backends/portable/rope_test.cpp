// SPDX-License-Identifier: Apache-2.0
// rope against a double-precision reference whose inverse frequencies are written out here
// (default, linear, llama3 and longrope scaling as transformers computes them).
#include <cmath>
#include <numbers>
#include <random>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "staticlm/backends/portable/kernel_test_util.h"

namespace staticlm::portable_test {
namespace {

struct RopeCase {
  std::string name;
  Attributes attrs;
  Shape shape;  // [B, S, H, Dh]
  int64_t rotary_dim;
  std::vector<int64_t> positions;
};

std::vector<double> reference_inv_freq(const RopeCase& c) {
  const double theta = *c.attrs.get_float("theta");
  const std::string scaling = *c.attrs.get_string_or("scaling", "none");
  std::vector<double> inv_freq;
  for (int64_t i = 0; i < c.rotary_dim / 2; ++i) {
    double f = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(c.rotary_dim));
    if (scaling == "linear") {
      f /= *c.attrs.get_float("factor");
    } else if (scaling == "longrope") {
      // The i-th of the comma-separated factors.
      std::stringstream factors(*c.attrs.get_string("frequency_factors"));
      std::string factor;
      for (int64_t j = 0; j <= i; ++j) {
        std::getline(factors, factor, ',');
      }
      f /= std::stod(factor);
    } else if (scaling == "llama3") {
      const double factor = *c.attrs.get_float("factor");
      const double low = *c.attrs.get_float("low_freq_factor");
      const double high = *c.attrs.get_float("high_freq_factor");
      const auto original = static_cast<double>(*c.attrs.get_int("original_max_position"));
      const double wavelen = 2.0 * std::numbers::pi / f;
      if (wavelen > original / low) {
        f = f / factor;
      } else if (wavelen >= original / high) {
        const double smooth = (original / wavelen - low) / (high - low);
        f = (1.0 - smooth) * f / factor + smooth * f;
      }
    }
    inv_freq.push_back(f);
  }
  return inv_freq;
}

class RopeTest : public ::testing::TestWithParam<RopeCase> {};

TEST_P(RopeTest, MatchesReference) {
  const RopeCase& c = GetParam();
  std::mt19937 rng(41);
  Tensor x = random_tensor(DType::kF32, c.shape, rng);
  for (DType index_dtype : {DType::kI32, DType::kI64}) {
    Tensor positions = index_tensor(index_dtype, c.positions);
    auto outputs = run_op(OpKind::kRope, {&x, &positions}, c.attrs);
    ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();

    const std::vector<double> xs = to_doubles(x);
    const std::vector<double> inv_freq = reference_inv_freq(c);
    const int64_t batch = c.shape[0], seq = c.shape[1], heads = c.shape[2], head_dim = c.shape[3];
    const int64_t half = c.rotary_dim / 2;
    std::vector<double> want = xs;  // padding rows and pass-through channels stay as they are
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t s = 0; s < seq; ++s) {
        const int64_t position = c.positions[static_cast<size_t>(s)];
        if (position < 0) {
          continue;
        }
        for (int64_t h = 0; h < heads; ++h) {
          const size_t base = static_cast<size_t>(((b * seq + s) * heads + h) * head_dim);
          for (int64_t i = 0; i < half; ++i) {
            const double angle = static_cast<double>(position) * inv_freq[static_cast<size_t>(i)];
            const double first = xs[base + i];
            const double second = xs[base + i + half];
            want[base + i] = first * std::cos(angle) - second * std::sin(angle);
            want[base + i + half] = second * std::cos(angle) + first * std::sin(angle);
          }
        }
      }
    }
    expect_close((*outputs)[0], want);
  }
}

Attributes llama3_attrs() {
  return Attributes{{"theta", 500000.0},       {"scaling", std::string("llama3")},
                    {"factor", 8.0},           {"low_freq_factor", 1.0},
                    {"high_freq_factor", 4.0}, {"original_max_position", int64_t{8192}}};
}

INSTANTIATE_TEST_SUITE_P(
    Scalings, RopeTest,
    ::testing::Values(RopeCase{"none", Attributes{{"theta", 10000.0}}, {1, 4, 2, 16}, 16, {0, 1, 2, 3}},
                      RopeCase{
                          "none_batched_padding", Attributes{{"theta", 10000.0}}, {2, 5, 3, 8}, 8, {9, 10, 11, -1, -1}},
                      RopeCase{"linear",
                               Attributes{{"theta", 10000.0}, {"scaling", std::string("linear")}, {"factor", 4.0}},
                               {1, 3, 2, 32},
                               32,
                               {0, 100, 2047}},
                      // transformers' llama3 bands: with Dh = 64 and theta 5e5 some frequencies are kept,
                      // some divided by factor and some interpolated.
                      RopeCase{"llama3", llama3_attrs(), {1, 4, 2, 64}, 64, {0, 7, 1000, 6000}},
                      RopeCase{"partial_rotary_dim",
                               Attributes{{"theta", 10000.0}, {"rotary_dim", int64_t{8}}},
                               {1, 3, 2, 32},
                               8,
                               {3, -5, 40}},
                      // Phi-4-mini's layout: 12 of 16 channels rotate, each frequency by its own factor.
                      RopeCase{"longrope_partial",
                               Attributes{{"theta", 10000.0},
                                          {"rotary_dim", int64_t{12}},
                                          {"scaling", std::string("longrope")},
                                          {"frequency_factors", std::string("1,1.25,2.5,5,11,23")}},
                               {1, 3, 2, 16},
                               12,
                               {0, 17, -1}}),
    [](const ::testing::TestParamInfo<RopeCase>& case_info) { return case_info.param.name; });

TEST(RopeTest, PaddingRowsAreCopiedBitForBit) {
  std::mt19937 rng(42);
  Tensor x = random_tensor(DType::kF32, {1, 3, 2, 8}, rng);
  Tensor positions = index_tensor(DType::kI64, {-1, -1, -1});
  auto outputs = run_op(OpKind::kRope, {&x, &positions}, Attributes{{"theta", 10000.0}});
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
  expect_close((*outputs)[0], to_doubles(x), 0.0, 0.0);
}

TEST(RopeTest, RefusesABadRotaryDim) {
  std::vector<TensorSpec> outputs = {TensorSpec{DType::kF32, {1, 2, 1, 8}}};
  const TensorSpec x{DType::kF32, {1, 2, 1, 8}};
  const TensorSpec positions{DType::kI32, {2}};
  auto kernel =
      make_kernel(OpKind::kRope, {&x, &positions}, outputs, Attributes{{"theta", 10000.0}, {"rotary_dim", int64_t{7}}});
  ASSERT_FALSE(kernel.ok());
  EXPECT_EQ(kernel.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(kernel.status().message().find("rope: attribute 'rotary_dim'"), std::string::npos)
      << kernel.status().message();
}

}  // namespace
}  // namespace staticlm::portable_test
