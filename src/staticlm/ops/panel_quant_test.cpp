// SPDX-License-Identifier: Apache-2.0
#include "staticlm/ops/panel_quant.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/core/half.h"
#include "staticlm/ops/op_set.h"

namespace staticlm {
namespace {

std::vector<float> random_matrix(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> m(static_cast<size_t>(rows * cols));
  for (float& v : m) {
    v = normal(rng);
  }
  m[3] = 0.9f;  // an outlier: its group's scale is far larger than the others'
  return m;
}

float stored_scale(const std::vector<uint8_t>& packed, const PanelLayout& layout, int64_t row, int64_t group) {
  uint16_t bits = 0;
  std::memcpy(&bits,
              packed.data() + (row / kPanelWidth) * layout.panel_elements() + group * layout.group_units() +
                  (row % kPanelWidth) * 2,
              2);
  return f16_to_f32(bits);
}

// Every element comes back within half a step of its group's scale (a whole step for the int4
// value q4_0 maps past +7), for both formats, every group size and sizes that leave padding.
TEST(PanelQuantTest, RoundTripStaysWithinTheGroupStep) {
  const int64_t rows = 37;
  const int64_t cols = 45;
  const std::vector<float> m = random_matrix(rows, cols, 7);
  for (PanelCodes codes : {PanelCodes::kInt8, PanelCodes::kInt4}) {
    for (int64_t g : {16, 32, 64, 128}) {
      const PanelLayout layout = PanelLayout::quantized(rows, cols, codes, g);
      std::vector<uint8_t> packed(static_cast<size_t>(layout.elements()), 0xAB);
      ASSERT_TRUE(quantize_panels(m, layout, packed, "w").ok());
      double error = 0.0;
      double energy = 0.0;
      std::vector<float> row(static_cast<size_t>(cols));
      for (int64_t r = 0; r < rows; ++r) {
        dequantize_panel_row(packed.data(), layout, r, row.data());
        for (int64_t c = 0; c < cols; ++c) {
          const float x = m[static_cast<size_t>(r * cols + c)];
          const float d = std::fabs(stored_scale(packed, layout, r, c / g));
          const float step = codes == PanelCodes::kInt8 ? 0.5f : 1.0f;
          // The f16 rounding of d moves the extreme code by at most 127 * 2^-11 of a step.
          EXPECT_LE(std::fabs(row[static_cast<size_t>(c)] - x), d * (step + 0.07f))
              << "codes " << static_cast<int>(codes) << " g " << g << " at " << r << "," << c;
          error += std::pow(row[static_cast<size_t>(c)] - x, 2);
          energy += x * x;
        }
      }
      const double relative = std::sqrt(error / energy);
      EXPECT_LT(relative, codes == PanelCodes::kInt8 ? 0.01 : 0.15) << "g " << g;
      EXPECT_GT(relative, 0.0);
    }
  }
}

TEST(PanelQuantTest, CodesAreExactForValuesOnTheGridAndPaddingHoldsZero) {
  // One row: -m maps to -8 in int4 (q4_0's extra code), 127 steps to 127 in int8.
  const int64_t cols = 20;  // group 16: the second group is 4 values and 12 of padding
  std::vector<float> m(static_cast<size_t>(cols));
  for (int64_t c = 0; c < cols; ++c) {
    m[static_cast<size_t>(c)] = static_cast<float>(c % 8 - 4) * 0.25f;  // -1 .. 0.75
  }
  const PanelLayout q8 = PanelLayout::quantized(1, cols, PanelCodes::kInt8, 16);
  std::vector<uint8_t> packed(static_cast<size_t>(q8.elements()));
  ASSERT_TRUE(quantize_panels(m, q8, packed, "w").ok());
  EXPECT_EQ(q8.packed_shape(), (Shape{1, 2, 64 + 32 * 16}));
  EXPECT_FLOAT_EQ(stored_scale(packed, q8, 0, 0), f16_to_f32(f32_to_f16(1.0f / 127.0f)));
  // k = 0 of lane 0 is -1.0: q = -127, the byte 1; k = 5 sits in word 1, byte 1.
  EXPECT_EQ(packed[64 + code_byte(PanelCodes::kInt8, 0, 0)], 1);
  EXPECT_EQ(code_byte(PanelCodes::kInt8, 0, 5), 129);
  EXPECT_EQ(code_byte(PanelCodes::kInt8, 1, 0), 4);
  // Lane 1 is padding: scale 0, codes q = 0; so is k >= 4 of the second group.
  EXPECT_EQ(stored_scale(packed, q8, 1, 0), 0.0f);
  const size_t second = static_cast<size_t>(q8.group_units());
  EXPECT_EQ(packed[second + 64 + static_cast<size_t>(code_byte(PanelCodes::kInt8, 0, 7))], 128);

  const PanelLayout q4 = PanelLayout::quantized(1, cols, PanelCodes::kInt4, 16);
  packed.assign(static_cast<size_t>(q4.elements()), 0);
  ASSERT_TRUE(quantize_panels(m, q4, packed, "w").ok());
  EXPECT_FLOAT_EQ(stored_scale(packed, q4, 0, 0), 0.125f);  // -(-1) / 8
  // k = 0 (-1.0 -> -8, nibble 0) and k = 4 (0.0 -> 0, nibble 8) share byte 0.
  EXPECT_EQ(code_byte(PanelCodes::kInt4, 0, 4), 0);
  EXPECT_EQ(packed[64], 0x80);
  std::vector<float> back(static_cast<size_t>(cols));
  dequantize_panel_row(packed.data(), q4, 0, back.data());
  for (int64_t c = 0; c < cols; ++c) {
    EXPECT_FLOAT_EQ(back[static_cast<size_t>(c)], m[static_cast<size_t>(c)]) << c;
  }
}

TEST(PanelQuantTest, RefusesNonFiniteWeightsNamingTheElement) {
  std::vector<float> m(64, 0.5f);
  m[33] = std::nanf("");
  const PanelLayout layout = PanelLayout::quantized(2, 32, PanelCodes::kInt8, 32);
  std::vector<uint8_t> packed(static_cast<size_t>(layout.elements()));
  const Status status = quantize_panels(m, layout, packed, "model.layers.0.mlp.up_proj.weight");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("tensor 'model.layers.0.mlp.up_proj.weight': element [1, 1] is nan"),
            std::string::npos)
      << status.message();
  m[33] = 1e9f;  // finite, but 1e9 / 127 is past f16's range
  EXPECT_NE(quantize_panels(m, layout, packed, "w").message().find("overflows f16"), std::string::npos);
}

Attributes quant_attrs(std::string_view layout, int64_t group, std::vector<int64_t> shapes) {
  return Attributes{{std::string(kWeightLayoutAttr), std::string(layout)},
                    {std::string(kWeightShapesAttr), std::move(shapes)},
                    {std::string(kWeightGroupAttr), group}};
}

TEST(PanelQuantTest, InferenceReadsQuantizedPanelsAndRefusesInconsistentOnes) {
  const TensorSpec x{DType::kF32, {3, 45}};
  const PanelLayout layout = PanelLayout::quantized(40, 45, PanelCodes::kInt4, 32);
  const TensorSpec weight{DType::kU8, layout.packed_shape()};
  const TensorSpec* linear[] = {&x, &weight};
  auto out = infer_outputs(OpKind::kLinear, linear, quant_attrs(kPanel32Q4Layout, 32, {40, 45}));
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->at(0).shape, (Shape{3, 40}));
  // The same bytes read as int8 codes, or with another group, are another shape.
  out = infer_outputs(OpKind::kLinear, linear, quant_attrs(kPanel32Q8Layout, 32, {40, 45}));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("is stored as [2,2,1088], found [2,2,576]"), std::string::npos)
      << out.status().message();
  out = infer_outputs(OpKind::kLinear, linear, quant_attrs(kPanel32Q4Layout, 48, {40, 45}));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("'weight_group': expected 16, 32, 64 or 128, found 48"), std::string::npos);
  const Attributes no_group{{std::string(kWeightLayoutAttr), std::string(kPanel32Q4Layout)},
                            {std::string(kWeightShapesAttr), std::vector<int64_t>{40, 45}}};
  EXPECT_FALSE(infer_outputs(OpKind::kLinear, linear, no_group).ok());
  const TensorSpec f32_weight{DType::kF32, layout.packed_shape()};
  const TensorSpec* wrong_dtype[] = {&x, &f32_weight};
  out = infer_outputs(OpKind::kLinear, wrong_dtype, quant_attrs(kPanel32Q4Layout, 32, {40, 45}));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("expected a u8 matrix, found f32"), std::string::npos);
}

}  // namespace
}  // namespace staticlm
