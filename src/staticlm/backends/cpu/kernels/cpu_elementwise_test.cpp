// SPDX-License-Identifier: Apache-2.0
// The cpu backend's elementwise and row kernels (swiglu, GeGLU, add, mul, softcap, rms_norm, rope,
// the vector exp) against the portable ones, at each instruction-set path this build compiled and
// this machine has.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/backends/cpu/kernels/cpu_conformance_util.h"
#include "staticlm/backends/portable/kernel_test_util.h"
#include "staticlm/core/str_cat.h"

namespace staticlm {
namespace {

using cpu_test::cpu_registry;
using cpu_test::expect_conforms;
using cpu_test::expect_padding_rows_skipped;
using cpu_test::host_has;
using cpu_test::IsaPath;
using cpu_test::path_name;
using portable_test::random_tensor;
using portable_test::run_op_with;

class CpuElementwiseTest : public ::testing::TestWithParam<IsaPath> {};

TEST_P(CpuElementwiseTest, SwigluMatchesThePortableSwiglu) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa;
  }
  std::mt19937 rng(27);
  for (const Shape& shape : {Shape{1, 1536}, Shape{3, 37}, Shape{5}, Shape{128, 100}}) {
    Tensor gate = random_tensor(DType::kF32, shape, rng, -30.0f, 30.0f);
    Tensor up = random_tensor(DType::kF32, shape, rng);
    // Saturated and exact values the exp's clamping must get right.
    const float extremes[] = {-100.0f, 100.0f, 0.0f, -87.0f, 89.0f};
    for (size_t i = 0; i < std::min<size_t>(5, static_cast<size_t>(gate.numel())); ++i) {
      gate.data<float>()[i] = extremes[i];
    }
    expect_conforms(GetParam(), OpKind::kSwiglu, {&gate, &up}, {}, 1e-5, 1e-6);
    // GeGLU's gelu_tanh through the same vector exp; the portable kernel's std::tanh.
    expect_conforms(GetParam(), OpKind::kGeglu, {&gate, &up}, {}, 1e-5, 1e-6);
  }
}

TEST_P(CpuElementwiseTest, AddMatchesThePortableAddAndLeavesBroadcastsToIt) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa;
  }
  std::mt19937 rng(31);
  for (const Shape& shape : {Shape{1, 576}, Shape{3, 37}, Shape{5}, Shape{128, 100}}) {
    Tensor a = random_tensor(DType::kF32, shape, rng);
    Tensor b = random_tensor(DType::kF32, shape, rng);
    expect_conforms(GetParam(), OpKind::kAdd, {&a, &b}, {}, 0.0, 0.0);
  }
  // A broadcast is the portable kernel's.
  Tensor a = random_tensor(DType::kF32, {4, 8}, rng);
  Tensor row = random_tensor(DType::kF32, {8}, rng);
  std::string kernel_name;
  auto got =
      run_op_with(cpu_registry(), *cpu_features_for_isa(GetParam().isa), OpKind::kAdd, {&a, &row}, {}, &kernel_name);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(kernel_name, "portable.add");
}

// Granite's multipliers and Gemma's embedding scale (a scalar), Phi-3's rope attention factor (a
// trailing row), and a product of one shape: the portable products, bit for bit. A broadcast of
// middle axes is the portable kernel's.
TEST_P(CpuElementwiseTest, MulMatchesThePortableMulAndLeavesOtherBroadcastsToIt) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa;
  }
  std::mt19937 rng(35);
  for (const Shape& shape : {Shape{1, 576}, Shape{3, 37}, Shape{5}, Shape{1, 128, 6, 40}}) {
    Tensor a = random_tensor(DType::kF32, shape, rng);
    Tensor b = random_tensor(DType::kF32, shape, rng);
    Tensor scalar = random_tensor(DType::kF32, {1}, rng);
    Tensor row = random_tensor(DType::kF32, {shape.back()}, rng);
    Shape ones(shape.size(), 1);
    ones.back() = shape.back();
    Tensor leading_ones = random_tensor(DType::kF32, ones, rng);
    expect_conforms(GetParam(), OpKind::kMul, {&a, &b}, {}, 0.0, 0.0);
    expect_conforms(GetParam(), OpKind::kMul, {&a, &scalar}, {}, 0.0, 0.0);
    expect_conforms(GetParam(), OpKind::kMul, {&scalar, &a}, {}, 0.0, 0.0);
    expect_conforms(GetParam(), OpKind::kMul, {&a, &row}, {}, 0.0, 0.0);
    if (shape.size() >= 2) {
      expect_conforms(GetParam(), OpKind::kMul, {&leading_ones, &a}, {}, 0.0, 0.0);
    }
  }
  Tensor a = random_tensor(DType::kF32, {4, 3, 8}, rng);
  Tensor column = random_tensor(DType::kF32, {3, 1}, rng);
  std::string kernel_name;
  auto got =
      run_op_with(cpu_registry(), *cpu_features_for_isa(GetParam().isa), OpKind::kMul, {&a, &column}, {}, &kernel_name);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(kernel_name, "portable.mul");
}

// Gemma 2's final logits: the vector tanh against std::tanh, from 0 (where 1 - 2 / (e^2y + 1)
// alone would cancel) through the polynomial's edge to saturation and infinities, over enough
// values to split across threads, and NaN kept.
TEST_P(CpuElementwiseTest, SoftcapMatchesThePortableSoftcap) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa;
  }
  std::mt19937 rng(36);
  for (const double cap : {30.0, 2.5, 0.5}) {
    Tensor x = random_tensor(DType::kF32, {3, 8000}, rng, -200.0f, 200.0f);
    const float inf = std::numeric_limits<float>::infinity();
    const float edges[] = {0.0f,
                           1e-30f,
                           -1e-7f,
                           0.625f * static_cast<float>(cap),
                           -0.6249f * static_cast<float>(cap),
                           1e-3f,
                           -4000.0f,
                           4000.0f,
                           3e38f,
                           -3e38f,
                           inf,
                           -inf};
    std::copy(std::begin(edges), std::end(edges), x.data<float>());
    for (int i = 0; i < 200; ++i) {
      x.data<float>()[20 + i] = static_cast<float>(cap) * (-1.0f + 0.01f * static_cast<float>(i));
    }
    expect_conforms(GetParam(), OpKind::kSoftcap, {&x}, Attributes{{"cap", cap}}, 5e-7, 1e-30);
  }
  Tensor nan = random_tensor(DType::kF32, {1, 20}, rng);
  nan.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  auto got = run_op_with(cpu_registry(), *cpu_features_for_isa(GetParam().isa), OpKind::kSoftcap, {&nan},
                         Attributes{{"cap", 30.0}});
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_TRUE(std::isnan((*got)[0].data<float>()[3]));
  EXPECT_FALSE(std::isnan((*got)[0].data<float>()[4]));
}

TEST_P(CpuElementwiseTest, RmsNormMatchesThePortableRmsNorm) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa;
  }
  std::mt19937 rng(32);
  // Widths below, at and off the vector width and its double; one row (decode) and a chunk.
  for (const Shape& shape : {Shape{1, 576}, Shape{3, 37}, Shape{2, 5}, Shape{128, 2048}, Shape{1, 2, 16}}) {
    Tensor x = random_tensor(DType::kF32, shape, rng, -4.0f, 4.0f);
    Tensor weight = random_tensor(DType::kF32, {shape.back()}, rng);
    // The portable kernel sums the squares one by one, the cpu one in vector lanes: 2048 of them
    // differ by about a microunit.
    expect_conforms(GetParam(), OpKind::kRmsNorm, {&x, &weight}, Attributes{{"eps", 1e-5}}, 5e-6, 1e-7);
  }
}

// The chunk's padding rows are not computed; a norm over rows that are not the chunk's (a
// per-head norm, say) computes them all.
TEST_P(CpuElementwiseTest, RmsNormLeavesTheChunksPaddingRowsUnwritten) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa;
  }
  std::mt19937 rng(34);
  Tensor x = random_tensor(DType::kF32, {1, 9, 576}, rng, -4.0f, 4.0f);
  Tensor weight = random_tensor(DType::kF32, {576}, rng);
  const Attributes attrs{{"eps", 1e-5}};
  expect_padding_rows_skipped(GetParam(), OpKind::kRmsNorm, {&x, &weight}, attrs, 9, 4, 5e-6);
  auto all = run_op_with(cpu_registry(), *cpu_features_for_isa(GetParam().isa), OpKind::kRmsNorm, {&x, &weight}, attrs,
                         nullptr, {10, 4, -123.0f});
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  EXPECT_NE((*all)[0].data<float>()[0], -123.0f) << "a row that is not the chunk's was skipped";
}

TEST_P(CpuElementwiseTest, RopeMatchesThePortableRope) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa;
  }
  std::mt19937 rng(33);
  const Attributes llama3{{"theta", 500000.0},       {"scaling", std::string("llama3")},
                          {"factor", 32.0},          {"low_freq_factor", 1.0},
                          {"high_freq_factor", 4.0}, {"original_max_position", int64_t{8192}}};
  const Attributes plain{{"theta", 10000.0}};
  // Head dims 64 (the shapes), 6 and 40 (tails of both widths); a left-padded chunk; a partial
  // rotary_dim (Phi-4-mini rotates 96 of 128 channels; 24 of 40 and 2 of 6 make tails).
  for (const int64_t head_dim : {int64_t{64}, int64_t{6}, int64_t{40}, int64_t{128}}) {
    // longrope (Phi-3): one factor per channel pair, 1 to about 16.
    std::string factors;
    for (int64_t i = 0; i < head_dim / 2; ++i) {
      factors += str_cat(i == 0 ? "" : ",", 1.0 + 0.5 * static_cast<double>(i));
    }
    const Attributes longrope{{"theta", 10000.0}, {"scaling", std::string("longrope")}, {"frequency_factors", factors}};
    Attributes partial_longrope = longrope;
    const int64_t rotary_dim = head_dim == 128 ? 96 : head_dim == 40 ? 24 : 2;
    partial_longrope.set("rotary_dim", rotary_dim);
    std::string partial_factors;
    for (int64_t i = 0; i < rotary_dim / 2; ++i) {
      partial_factors += str_cat(i == 0 ? "" : ",", 1.0 + 0.5 * static_cast<double>(i));
    }
    partial_longrope.set("frequency_factors", partial_factors);
    Attributes partial_plain = plain;
    partial_plain.set("rotary_dim", rotary_dim);
    for (const Attributes* attrs :
         std::initializer_list<const Attributes*>{&plain, &llama3, &longrope, &partial_plain, &partial_longrope}) {
      Tensor x = random_tensor(DType::kF32, {1, 5, 3, head_dim}, rng);
      Tensor positions = std::move(Tensor::zeros(DType::kI32, {5})).value();
      const int32_t at[] = {-1, -1, 7, 8, 4000};
      std::copy(std::begin(at), std::end(at), positions.data<int32_t>());
      // The same angles; g++ may fuse the rotation's multiply and add (an ulp).
      expect_conforms(GetParam(), OpKind::kRope, {&x, &positions}, *attrs, 1e-6, 1e-7);
    }
  }
}

TEST_P(CpuElementwiseTest, TheVectorExpIsWithinTwoUlpOfExpf) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa;
  }
  const cpu::ExpShiftedFn exp_shifted = GetParam().exp_shifted;
  std::vector<float> x;
  for (float v = -87.0f; v <= 88.0f; v += 0.0137f) {
    x.push_back(v);
  }
  std::vector<float> got = x;
  exp_shifted(got.data(), static_cast<int64_t>(got.size()), 0.0f);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_NEAR(got[i] / std::exp(static_cast<double>(x[i])), 1.0, 2.5e-7) << "exp(" << x[i] << ")";
  }
  // The sum it returns, over a count off the vector width (the tail path too).
  std::vector<float> small = {-3.0f, -1.5f, 0.0f,  0.5f, 1.0f, 2.0f,  2.5f,   3.0f, -7.0f, 4.0f,
                              0.25f, 1.75f, -0.5f, 5.0f, 6.0f, -2.0f, 0.125f, 3.5f, 2.25f};
  double want_sum = 0.0;
  for (float v : small) {
    want_sum += std::exp(static_cast<double>(v));
  }
  EXPECT_NEAR(exp_shifted(small.data(), static_cast<int64_t>(small.size()), 0.0f) / want_sum, 1.0, 1e-6);
  // The shift is subtracted first, as the softmax needs.
  std::vector<float> shifted = {1.0f, 2.0f, 3.0f};
  EXPECT_NEAR(exp_shifted(shifted.data(), 3, 3.0f), std::exp(-2.0) + std::exp(-1.0) + 1.0, 1e-6);
  EXPECT_NEAR(shifted[2], 1.0f, 1e-7);
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuElementwiseTest, ::testing::ValuesIn(cpu_kernel_paths()), path_name);
// A build without native kernels has no path: NoNativePathMeansThePortableKernels checks it.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CpuElementwiseTest);

}  // namespace
}  // namespace staticlm
