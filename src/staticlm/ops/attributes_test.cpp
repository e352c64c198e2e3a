// SPDX-License-Identifier: Apache-2.0
#include "staticlm/ops/attributes.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

void expect_error(const Status& status, std::string_view expected) {
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), expected);
}

TEST(AttributesTest, KeepsEntriesSortedAndReplacesByName) {
  Attributes attrs{{"theta", 10000.0}, {"axis", int64_t{-1}}, {"mode", std::string("tanh")}};
  attrs.set("perm", std::vector<int64_t>{1, 0});
  attrs.set("axis", int64_t{2});
  std::vector<std::string> names;
  for (const auto& [name, value] : attrs.entries()) {
    names.push_back(name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"axis", "mode", "perm", "theta"}));
  ASSERT_TRUE(attrs.get_int("axis").ok());
  EXPECT_EQ(*attrs.get_int("axis"), 2);
  EXPECT_TRUE(attrs.has("perm"));
  EXPECT_FALSE(attrs.has("per"));
  EXPECT_EQ(attrs.find("missing"), nullptr);
}

TEST(AttributesTest, TypedGettersReturnTheirValues) {
  const Attributes attrs{
      {"n", int64_t{7}}, {"eps", 1e-5}, {"dtype", std::string("f16")}, {"shape", std::vector<int64_t>{2, -1}}};
  EXPECT_EQ(*attrs.get_int("n"), 7);
  EXPECT_DOUBLE_EQ(*attrs.get_float("eps"), 1e-5);
  EXPECT_EQ(*attrs.get_string("dtype"), "f16");
  EXPECT_EQ(*attrs.get_ints("shape"), (std::vector<int64_t>{2, -1}));
  // An int is a valid float (theta = 10000 written without a decimal point).
  EXPECT_DOUBLE_EQ(*attrs.get_float("n"), 7.0);
}

TEST(AttributesTest, TypeMismatchesNameTheAttributeAndBothTypes) {
  const Attributes attrs{
      {"n", int64_t{7}}, {"eps", 1e-5}, {"dtype", std::string("f16")}, {"shape", std::vector<int64_t>{2}}};
  expect_error(attrs.get_int("eps").status(), "attribute 'eps': expected int, found float");
  expect_error(attrs.get_float("dtype").status(), "attribute 'dtype': expected float, found string");
  expect_error(attrs.get_string("shape").status(), "attribute 'shape': expected string, found int list");
  expect_error(attrs.get_ints("n").status(), "attribute 'n': expected int list, found int");
  expect_error(attrs.get_int("axis").status(), "missing attribute 'axis'");
  expect_error(attrs.get_float("scale").status(), "missing attribute 'scale'");
}

TEST(AttributesTest, DefaultsApplyOnlyToAbsentAttributes) {
  const Attributes attrs{{"axis", int64_t{1}}, {"approximate", 3.0}};
  EXPECT_EQ(*attrs.get_int_or("axis", -1), 1);
  EXPECT_EQ(*attrs.get_int_or("other", -1), -1);
  EXPECT_DOUBLE_EQ(*attrs.get_float_or("eps", 1e-6), 1e-6);
  EXPECT_DOUBLE_EQ(*attrs.get_float_or("axis", 0.5), 1.0);
  EXPECT_EQ(*attrs.get_string_or("mode", "none"), "none");
  expect_error(attrs.get_string_or("approximate", "none").status(),
               "attribute 'approximate': expected string, found float");
  expect_error(attrs.get_int_or("approximate", 0).status(), "attribute 'approximate': expected int, found float");
  const Attributes named{{"mode", std::string("x")}};
  expect_error(named.get_float_or("mode", 1.0).status(), "attribute 'mode': expected float, found string");
}

TEST(AttributesTest, ComparesByContent) {
  Attributes a{{"x", int64_t{1}}, {"y", 2.0}};
  Attributes b;
  b.set("y", 2.0);
  b.set("x", int64_t{1});
  EXPECT_EQ(a, b);
  b.set("x", 1.0);  // same number, other type
  EXPECT_FALSE(a == b);
}

TEST(AttributesTest, TypeNames) {
  EXPECT_EQ(attr_type_name(AttrValue(int64_t{1})), "int");
  EXPECT_EQ(attr_type_name(AttrValue(1.0)), "float");
  EXPECT_EQ(attr_type_name(AttrValue(std::string("s"))), "string");
  EXPECT_EQ(attr_type_name(AttrValue(std::vector<int64_t>{})), "int list");
}

}  // namespace
}  // namespace staticlm
