// SPDX-License-Identifier: Apache-2.0
#include "staticlm/ops/weight_layout.h"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/ops/op_set.h"

namespace staticlm {
namespace {

Attributes panel_attrs(std::vector<int64_t> shapes) {
  return Attributes{{std::string(kWeightLayoutAttr), std::string(kPanel32Layout)},
                    {std::string(kWeightShapesAttr), std::move(shapes)}};
}

// Every element lands where index() says, padding is zero, for both groups and odd sizes.
TEST(WeightLayoutTest, PackPlacesEveryElementAtItsIndexAndZeroesThePadding) {
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    const PanelLayout layout = PanelLayout::of(37, 5, dtype);
    EXPECT_EQ(layout.packed_shape(), (Shape{2, dtype == DType::kBF16 ? 3 : 5, dtype == DType::kBF16 ? 64 : 32}));
    std::vector<uint16_t> rows(37 * 5);
    for (size_t i = 0; i < rows.size(); ++i) {
      rows[i] = static_cast<uint16_t>(i + 1);
    }
    std::vector<uint16_t> packed(static_cast<size_t>(layout.elements()), 0xFFFF);
    pack_panels({reinterpret_cast<const uint8_t*>(rows.data()), rows.size() * 2}, 2, layout,
                {reinterpret_cast<uint8_t*>(packed.data()), packed.size() * 2});
    std::vector<bool> seen(packed.size(), false);
    for (int64_t r = 0; r < 37; ++r) {
      for (int64_t c = 0; c < 5; ++c) {
        const auto at = static_cast<size_t>(layout.index(r, c));
        ASSERT_LT(at, packed.size());
        EXPECT_EQ(packed[at], rows[static_cast<size_t>(r * 5 + c)]) << r << "," << c;
        EXPECT_FALSE(seen[at]);
        seen[at] = true;
      }
    }
    for (size_t i = 0; i < packed.size(); ++i) {
      if (!seen[i]) {
        EXPECT_EQ(packed[i], 0) << "padding element " << i;
      }
    }
  }
}

TEST(WeightLayoutTest, Bf16PairsShareAWordAndF32KeepsOneValuePerLane) {
  const PanelLayout pairs = PanelLayout::of(64, 4, DType::kBF16);
  EXPECT_EQ(pairs.index(0, 1), 1);
  EXPECT_EQ(pairs.index(1, 0), 2);
  EXPECT_EQ(pairs.index(0, 2), 64);
  EXPECT_EQ(pairs.index(32, 0), pairs.panel_elements());
  const PanelLayout single = PanelLayout::of(64, 4, DType::kF16);
  EXPECT_EQ(single.index(1, 0), 1);
  EXPECT_EQ(single.index(0, 1), 32);
}

TEST(WeightLayoutTest, InferenceReadsTheLogicalShapeOfPackedMatrices) {
  const TensorSpec x{DType::kF32, {3, 5}};
  const TensorSpec weight{DType::kBF16, PanelLayout::of(40, 5, DType::kBF16).packed_shape()};
  const TensorSpec* linear[] = {&x, &weight};
  auto out = infer_outputs(OpKind::kLinear, linear, panel_attrs({40, 5}));
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->at(0).shape, (Shape{3, 40}));

  const TensorSpec ids{DType::kI32, {7}};
  const TensorSpec* embedding[] = {&weight, &ids};
  out = infer_outputs(OpKind::kEmbedding, embedding, panel_attrs({40, 5}));
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->at(0).shape, (Shape{7, 5}));

  const TensorSpec small{DType::kBF16, PanelLayout::of(8, 5, DType::kBF16).packed_shape()};
  const TensorSpec* fused[] = {&x, &weight, &small};
  Attributes attrs = panel_attrs({40, 5, 8, 5});
  attrs.set("parts", int64_t{2});
  out = infer_outputs(OpKind::kMultiLinear, fused, attrs);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->at(1).shape, (Shape{3, 8}));
}

TEST(WeightLayoutTest, RefusesShapesThatDoNotMatchTheStoredTensor) {
  const TensorSpec x{DType::kF32, {3, 5}};
  const TensorSpec weight{DType::kF32, PanelLayout::of(40, 5, DType::kF32).packed_shape()};
  const TensorSpec* linear[] = {&x, &weight};
  auto out = infer_outputs(OpKind::kLinear, linear, panel_attrs({70, 5}));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("is stored as [3,5,32], found [2,5,32]"), std::string::npos)
      << out.status().message();
  EXPECT_FALSE(infer_outputs(OpKind::kLinear, linear, panel_attrs({40})).ok());
  EXPECT_FALSE(infer_outputs(OpKind::kLinear, linear, panel_attrs({40, 6})).ok());
  EXPECT_FALSE(infer_outputs(OpKind::kLinear, linear, panel_attrs({int64_t{1} << 62, 5})).ok());
  Attributes other = panel_attrs({40, 5});
  other.set(std::string(kWeightLayoutAttr), std::string("tiles"));
  out = infer_outputs(OpKind::kLinear, linear, other);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("expected 'rows', 'panel32', 'panel32_q8' or 'panel32_q4', found 'tiles'"),
            std::string::npos);
  const TensorSpec quantized{DType::kQ8_0, {3, 5, 32}};
  const TensorSpec* q[] = {&x, &quantized};
  EXPECT_FALSE(infer_outputs(OpKind::kLinear, q, panel_attrs({40, 5})).ok());
}

}  // namespace
}  // namespace staticlm
