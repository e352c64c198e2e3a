// SPDX-License-Identifier: Apache-2.0
#include "staticlm/json/strict_json.h"

#include <string>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

TEST(StrictJsonTest, ParsesAnObject) {
  auto parsed = parse_json_object(R"({"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 3}, {"x": 4}]})", "f.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_EQ((*parsed)["a"]["x"], 1);
  EXPECT_EQ((*parsed)["b"]["x"], 2);
  EXPECT_EQ((*parsed)["c"][1]["x"], 4);
}

TEST(StrictJsonTest, RefusesDuplicateKeysAtAnyDepth) {
  auto top = parse_json_object(R"({"a": 1, "b": 2, "a": 3})", "f.json");
  ASSERT_FALSE(top.ok());
  EXPECT_EQ(top.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(top.status().message(), "'f.json': key 'a' appears twice at the top level");

  auto nested = parse_json_object(R"({"outer": {"inner": {"k": 1, "k": 2}}})", "f.json");
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.status().message(), "'f.json': key 'k' appears twice in the object under 'inner'");
}

TEST(StrictJsonTest, RefusesMalformedTextAndNonObjects) {
  auto truncated = parse_json_object(R"({"a": )", "f.json");
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.status().message().find("'f.json': not valid JSON: "), std::string::npos)
      << truncated.status().message();

  auto trailing = parse_json_object(R"({"a": 1} x)", "f.json");
  EXPECT_FALSE(trailing.ok());

  auto number = parse_json_object("42", "f.json");
  ASSERT_FALSE(number.ok());
  EXPECT_EQ(number.status().message(), "'f.json': expected a JSON object at the top level, found number");
}

TEST(StrictJsonTest, PreviewCutsLongValues) {
  EXPECT_EQ(json_preview(nlohmann::json("two")), "\"two\"");
  EXPECT_EQ(json_preview(nlohmann::json::array({1, 2})), "[1,2]");
  const std::string preview = json_preview(nlohmann::json(std::string(500, 'z')));
  EXPECT_EQ(preview.size(), 63u);
  EXPECT_EQ(preview.substr(60), "...");
}

TEST(JsonNestingDepthTest, CountsArraysAndObjectsOutsideStrings) {
  EXPECT_EQ(json_nesting_depth("1"), 0);
  EXPECT_EQ(json_nesting_depth("{}"), 1);
  EXPECT_EQ(json_nesting_depth(R"({"a": [1, {"b": [[]]}], "c": {}})"), 5);
  EXPECT_EQ(json_nesting_depth(R"({"a": "[[[{{{", "b": "\"[["})"), 1) << "brackets inside strings do not count";
  EXPECT_EQ(json_nesting_depth(std::string(10000, '[')), 10000) << "counted without parsing";
}

}  // namespace
}  // namespace staticlm
