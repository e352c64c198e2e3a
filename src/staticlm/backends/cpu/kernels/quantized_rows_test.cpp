// SPDX-License-Identifier: Apache-2.0
// The quantization of x for the integer linear kernels (quantized_rows.h): per group, with its
// scale and code sum, by the scalar loop and by every native path's vector quantizer this build
// and CPU have, which must give the same codes, scales and sums bit for bit.
#include "staticlm/backends/cpu/kernels/quantized_rows.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/backends/cpu/kernels/register.h"

namespace staticlm {
namespace {

struct Quantizer {
  std::string name;
  cpu::QuantizeGroupFn quantize_group;
};

// Each native path's quantizer the host can run, then the scalar loop.
std::vector<Quantizer> quantizers() {
  std::vector<Quantizer> out;
  for (const CpuKernelPath& path : cpu_kernel_paths()) {
    if (CpuFeatures::host().covers(path.needs)) {
      out.push_back({path.isa, path.quantize_group});
    }
  }
  out.push_back({"scalar", cpu::quantize_group_scalar});
  return out;
}

// Every way of quantizing this build and CPU have (each native path's, scalar) on hand-checked
// values.
TEST(QuantizedRowsTest, ActivationsAreQuantizedPerGroupWithTheirCodeSums) {
  for (const Quantizer& quantizer : quantizers()) {
    SCOPED_TRACE(quantizer.name);
    const cpu::QuantizeGroupFn with = quantizer.quantize_group;
    const std::vector<float> x = {0.5f,   -1.0f, 0.25f,  0.0f, 0.0f, 0.0f, 0.0f, 0.0f,  // group 0: max 1
                                  100.0f, 1.0f,  -50.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 3.0f};
    cpu::QuantizedRows q;
    cpu::quantize_rows(x.data(), 1, 17, 8, q, with);
    ASSERT_EQ(q.groups, 3);
    EXPECT_EQ(q.codes(0)[0], 64);  // 0.5 * 127 = 63.5, to even
    EXPECT_EQ(q.codes(0)[1], -127);
    EXPECT_EQ(q.codes(0)[2], 32);  // 31.75
    EXPECT_FLOAT_EQ(q.row_scales(0)[0], 1.0f / 127.0f);
    EXPECT_EQ(q.row_sums(0)[0], 64 - 127 + 32);
    // The outlier keeps its group's scale to itself: 1.0 next to 100 still gets a code of 1.
    EXPECT_EQ(q.codes(0)[8], 127);
    EXPECT_EQ(q.codes(0)[9], 1);
    EXPECT_EQ(q.codes(0)[10], -64);  // -63.5, to even
    EXPECT_EQ(q.codes(0)[16], 127);
    EXPECT_EQ(q.codes(0)[17], 0);  // past K: zero
    EXPECT_EQ(q.row_sums(0)[2], 127);
    cpu::quantize_rows(std::vector<float>(8, 0.0f).data(), 1, 8, 8, q, with);
    EXPECT_EQ(q.row_scales(0)[0], 0.0f);
    EXPECT_EQ(q.codes(0)[0], 0);
    // A non-finite value makes its group's scale NaN (the outputs it feeds are NaN), never a code.
    std::vector<float> bad(16, 1.0f);
    bad[3] = std::nanf("");
    bad[12] = INFINITY;
    cpu::quantize_rows(bad.data(), 1, 16, 8, q, with);
    EXPECT_TRUE(std::isnan(q.row_scales(0)[0]));
    EXPECT_TRUE(std::isnan(q.row_scales(0)[1]));
    EXPECT_EQ(q.codes(0)[0], 0);
    EXPECT_EQ(q.row_sums(0)[0], 0);
  }
}

// The vector quantizers equal the scalar one on random rows: every group size, K off the group
// and off the vector width, groups of zeros, ties, and non-finite values.
TEST(QuantizedRowsTest, TheVectorQuantizersEqualTheScalarOne) {
  if (quantizers().size() < 2) {
    GTEST_SKIP() << "this build (native kernels: " << cpu_kernel_arch() << ") and CPU ("
                 << CpuFeatures::host().to_string()
                 << ") have no vector quantizer: every way of quantizing is the scalar loop";
  }
  std::mt19937 rng(54);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int64_t group : {int64_t{8}, int64_t{16}, int64_t{32}, int64_t{64}, int64_t{128}}) {
    for (int64_t inner : {group, 3 * group + 5, int64_t{300}, int64_t{13}}) {
      SCOPED_TRACE(testing::Message() << "g" << group << " K " << inner);
      const int64_t rows = 7;
      std::vector<float> x(static_cast<size_t>(rows * inner));
      for (float& v : x) {
        v = normal(rng);
      }
      std::fill(x.begin() + inner, x.begin() + inner + std::min<int64_t>(group, inner), 0.0f);  // row 1's first group
      for (int64_t k = 0; k < std::min<int64_t>(group, inner); ++k) {  // row 2: ties at 0.5 steps
        x[static_cast<size_t>(2 * inner + k)] = k == 0 ? 127.0f : static_cast<float>(k) + 0.5f;
      }
      x[static_cast<size_t>(3 * inner + 1)] = std::nanf("");
      x[static_cast<size_t>(4 * inner + inner - 1)] = -INFINITY;
      cpu::QuantizedRows scalar;
      cpu::quantize_rows(x.data(), rows, inner, group, scalar, cpu::quantize_group_scalar);
      for (const Quantizer& quantizer : quantizers()) {
        SCOPED_TRACE(quantizer.name);
        cpu::QuantizedRows vector;
        cpu::quantize_rows(x.data(), rows, inner, group, vector, quantizer.quantize_group);
        ASSERT_EQ(vector.code_words, scalar.code_words);
        ASSERT_EQ(vector.sums, scalar.sums);
        for (size_t i = 0; i < scalar.scales.size(); ++i) {
          if (std::isnan(scalar.scales[i])) {
            EXPECT_TRUE(std::isnan(vector.scales[i])) << i;
          } else {
            EXPECT_EQ(vector.scales[i], scalar.scales[i]) << i;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace staticlm
