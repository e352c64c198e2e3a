// SPDX-License-Identifier: Apache-2.0
#include "staticlm/graph/graph.h"

#include <memory>
#include <vector>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

std::shared_ptr<ByteSource> zero_bytes(size_t count) {
  return make_owned_source(std::vector<uint8_t>(count, 0));
}

TEST(SanitizeConstantNameTest, ReplacesCharactersOutsideTheAllowedSet) {
  EXPECT_EQ(sanitize_constant_name("model.layers.0.mlp.up_proj.weight"), "model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(sanitize_constant_name("a.b/c"), "a.b_c");
  EXPECT_EQ(sanitize_constant_name("x:y z-w"), "x_y_z_w");
  EXPECT_EQ(sanitize_constant_name("\xc3\xa9"), "__");
  EXPECT_EQ(sanitize_constant_name(""), "constant");
}

TEST(ConstantTableTest, NamesThatSanitizeAlikeStayDistinct) {
  ConstantTable table;
  auto first = table.add("a.b/c", DType::kF32, {2}, zero_bytes(8));
  auto second = table.add("a.b_c", DType::kF32, {2}, zero_bytes(8));
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_NE(*first, *second);
  EXPECT_EQ(table.at(*first).name, "a.b_c");
  EXPECT_EQ(table.at(*second).name, "a.b_c_1");
  EXPECT_EQ(table.find("a.b_c"), *first);
  EXPECT_EQ(table.find("a.b_c_1"), *second);
  EXPECT_EQ(table.find("a.b/c"), -1);
  EXPECT_EQ(table.size(), 2u);
}

TEST(ConstantTableTest, PassCreatedConstantGetsAFreshName) {
  ConstantTable table;
  auto weight = table.add("w", DType::kF16, {3}, zero_bytes(6));
  ASSERT_TRUE(weight.ok());
  // A pass that folds something into a new constant and reuses the source name.
  auto folded = table.add("w", DType::kF32, {3}, zero_bytes(12));
  ASSERT_TRUE(folded.ok()) << folded.status().to_string();
  EXPECT_EQ(table.at(*folded).name, "w_1");
  EXPECT_EQ(table.at(*weight).name, "w");
  EXPECT_EQ(table.at(*folded).dtype, DType::kF32);
  EXPECT_EQ(table.find("w_1"), *folded);
}

TEST(ConstantTableTest, SuffixSkipsNamesAlreadyTaken) {
  ConstantTable table;
  ASSERT_TRUE(table.add("w", DType::kU8, {1}, zero_bytes(1)).ok());
  ASSERT_TRUE(table.add("w_1", DType::kU8, {1}, zero_bytes(1)).ok());
  auto third = table.add("w", DType::kU8, {1}, zero_bytes(1));
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(table.at(*third).name, "w_2");
  std::vector<std::string> names;
  for (const ConstantEntry& entry : table.entries()) {
    names.push_back(entry.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"w", "w_1", "w_2"}));
}

TEST(ConstantTableTest, RefusesASourceOfTheWrongSize) {
  ConstantTable table;
  auto bad = table.add("layers.0/bias", DType::kF32, {2}, zero_bytes(7));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("constant 'layers.0/bias'"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("7 bytes, expected 8"), std::string::npos) << bad.status().message();
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.find("layers.0_bias"), -1);
}

TEST(ConstantTableTest, RefusesANullSourceAndABadShape) {
  ConstantTable table;
  auto no_source = table.add("w", DType::kF32, {2}, nullptr);
  ASSERT_FALSE(no_source.ok());
  EXPECT_NE(no_source.status().message().find("no byte source"), std::string::npos);
  auto negative = table.add("w", DType::kF32, {-2}, zero_bytes(0));
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("constant 'w'"), std::string::npos);
  EXPECT_NE(negative.status().message().find("negative"), std::string::npos) << negative.status().message();
}

TEST(GraphTest, AddInputChecksNameAndShape) {
  Graph graph(std::make_shared<ConstantTable>());
  auto x = graph.add_input("x", DType::kF32, {2, 3});
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(graph.value(*x).kind, ValueKind::kInput);
  EXPECT_EQ(graph.value(*x).input_index, 0);
  EXPECT_EQ(graph.spec(*x), (TensorSpec{DType::kF32, {2, 3}}));

  auto again = graph.add_input("x", DType::kF32, {1});
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("graph input 'x': the name is already taken"), std::string::npos);

  auto negative = graph.add_input("y", DType::kF32, {2, -1});
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("graph input 'y'"), std::string::npos);
  EXPECT_NE(negative.status().message().find("negative"), std::string::npos);

  EXPECT_FALSE(graph.add_input("", DType::kF32, {1}).ok());
  EXPECT_EQ(graph.inputs().size(), 1u);
  EXPECT_EQ(graph.num_values(), 1u);
}

TEST(GraphTest, UseConstantGivesOneValuePerConstant) {
  auto table = std::make_shared<ConstantTable>();
  auto id = table->add("embed", DType::kF16, {10, 4}, zero_bytes(80));
  ASSERT_TRUE(id.ok());
  Graph prefill(table);
  Graph decode(table);
  auto first = prefill.use_constant(*id);
  auto second = prefill.use_constant(*id);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*first, *second);
  EXPECT_EQ(prefill.num_values(), 1u);
  EXPECT_EQ(prefill.value(*first).kind, ValueKind::kConstant);
  EXPECT_EQ(prefill.spec(*first), (TensorSpec{DType::kF16, {10, 4}}));
  ASSERT_TRUE(decode.use_constant(*id).ok());
  EXPECT_EQ(&prefill.constants(), &decode.constants());

  auto missing = prefill.use_constant(5);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(missing.status().message().find("constant id 5"), std::string::npos);
}

TEST(GraphTest, AddNodeInfersOutputs) {
  Graph graph(std::make_shared<ConstantTable>());
  auto x = graph.add_input("x", DType::kF32, {2, 3});
  auto bias = graph.add_input("bias", DType::kF32, {3});
  ASSERT_TRUE(x.ok() && bias.ok());
  auto sum = graph.add(OpKind::kAdd, {*x, *bias}, {}, "residual");
  ASSERT_TRUE(sum.ok()) << sum.status().to_string();
  EXPECT_EQ(graph.spec(*sum), (TensorSpec{DType::kF32, {2, 3}}));
  EXPECT_EQ(graph.value(*sum).kind, ValueKind::kNodeOutput);
  EXPECT_EQ(graph.value(*sum).producer, 0);
  ASSERT_EQ(graph.nodes().size(), 1u);
  EXPECT_EQ(graph.nodes()[0].name, "residual");
  EXPECT_EQ(graph.nodes()[0].inputs, (std::vector<ValueId>{*x, *bias}));
  EXPECT_EQ(graph.nodes()[0].outputs, (std::vector<ValueId>{*sum}));

  auto flat = graph.add_node(OpKind::kReshape, {*sum}, Attributes{{"shape", std::vector<int64_t>{-1}}});
  ASSERT_TRUE(flat.ok());
  ASSERT_EQ(flat->size(), 1u);
  EXPECT_EQ(graph.spec((*flat)[0]), (TensorSpec{DType::kF32, {6}}));
  EXPECT_EQ(graph.value((*flat)[0]).producer, 1);
}

TEST(GraphTest, AbsentOptionalInputIsPassedAsNoSpec) {
  auto table = std::make_shared<ConstantTable>();
  auto weight_id = table->add("w", DType::kBF16, {5, 4}, zero_bytes(40));
  ASSERT_TRUE(weight_id.ok());
  Graph graph(table);
  auto x = graph.add_input("x", DType::kF32, {2, 4});
  auto weight = graph.use_constant(*weight_id);
  ASSERT_TRUE(x.ok() && weight.ok());
  auto y = graph.add(OpKind::kLinear, {*x, *weight, kNoValue});
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(graph.spec(*y), (TensorSpec{DType::kF32, {2, 5}}));

  auto missing_weight = graph.add(OpKind::kLinear, {*x, kNoValue});
  ASSERT_FALSE(missing_weight.ok());
  EXPECT_NE(missing_weight.status().message().find("node 1 (op 'linear')"), std::string::npos);
  EXPECT_NE(missing_weight.status().message().find("required input 1 is absent"), std::string::npos);
}

TEST(GraphTest, AddNodeErrorsNameTheNode) {
  Graph graph(std::make_shared<ConstantTable>());
  auto x = graph.add_input("x", DType::kF32, {2, 3});
  auto y = graph.add_input("y", DType::kF32, {4});
  auto ids = graph.add_input("ids", DType::kI32, {2});
  ASSERT_TRUE(x.ok() && y.ok() && ids.ok());
  ASSERT_TRUE(graph.add(OpKind::kSilu, {*x}).ok());

  auto mismatch = graph.add(OpKind::kMul, {*x, *y});
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(mismatch.status().message().find("node 1 (op 'mul'): "), std::string::npos) << mismatch.status().message();
  EXPECT_NE(mismatch.status().message().find("do not broadcast"), std::string::npos);

  auto wrong_dtype = graph.add(OpKind::kSilu, {*ids}, {}, "act");
  ASSERT_FALSE(wrong_dtype.ok());
  EXPECT_NE(wrong_dtype.status().message().find("node 1 (op 'silu', name 'act')"), std::string::npos)
      << wrong_dtype.status().message();
  EXPECT_NE(wrong_dtype.status().message().find("expected dtype f32, found i32"), std::string::npos);

  auto dangling = graph.add(OpKind::kSilu, {42});
  ASSERT_FALSE(dangling.ok());
  EXPECT_NE(dangling.status().message().find("input 0 refers to value 42, which does not exist"), std::string::npos);

  // Refused nodes leave the graph as it was.
  EXPECT_EQ(graph.nodes().size(), 1u);
  EXPECT_EQ(graph.num_values(), 4u);
}

TEST(GraphTest, RefusesAnOutputShapeWithTooManyElements) {
  Graph graph(std::make_shared<ConstantTable>());
  auto column = graph.add_input("column", DType::kF32, {int64_t{1} << 32, 1});
  auto row = graph.add_input("row", DType::kF32, {1, int64_t{1} << 32});
  ASSERT_TRUE(column.ok() && row.ok());
  auto product = graph.add(OpKind::kMul, {*column, *row});
  ASSERT_FALSE(product.ok());
  EXPECT_NE(product.status().message().find("output 0 would have the invalid shape [4294967296,4294967296]"),
            std::string::npos)
      << product.status().message();
}

TEST(GraphTest, AddOutputChecksValueAndName) {
  Graph graph(std::make_shared<ConstantTable>());
  auto x = graph.add_input("x", DType::kF32, {2});
  ASSERT_TRUE(x.ok());
  auto y = graph.add(OpKind::kSilu, {*x});
  ASSERT_TRUE(y.ok());
  EXPECT_TRUE(graph.add_output("y", *y).ok());
  Status taken = graph.add_output("y", *y);
  EXPECT_NE(taken.message().find("graph output 'y': the name is already taken"), std::string::npos);
  Status missing = graph.add_output("z", 7);
  EXPECT_NE(missing.message().find("graph output 'z': value 7 does not exist"), std::string::npos);
  ASSERT_EQ(graph.outputs().size(), 1u);
  EXPECT_EQ(graph.outputs()[0].value, *y);
}

TEST(GraphTest, NewValueRecordsItsProducer) {
  Graph graph(nullptr);  // a graph without a shared table gets its own
  EXPECT_EQ(graph.constants().size(), 0u);
  const ValueId value = graph.new_value(DType::kF16, {3, 3}, 7);
  EXPECT_EQ(graph.value(value).producer, 7);
  EXPECT_EQ(graph.value(value).kind, ValueKind::kNodeOutput);
  EXPECT_EQ(graph.spec(value), (TensorSpec{DType::kF16, {3, 3}}));
}

TEST(DescribeNodeTest, NamesIndexOpAndName) {
  EXPECT_EQ(describe_node(3, OpKind::kAdd, ""), "node 3 (op 'add')");
  EXPECT_EQ(describe_node(0, OpKind::kRmsNorm, "layers.0.norm"), "node 0 (op 'rms_norm', name 'layers.0.norm')");
  EXPECT_EQ(describe_node(1, static_cast<OpKind>(200), ""), "node 1 (unknown op #200)");
}

}  // namespace
}  // namespace staticlm
