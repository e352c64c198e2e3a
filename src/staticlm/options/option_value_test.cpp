// SPDX-License-Identifier: Apache-2.0
#include "staticlm/options/option_value.h"

#include <gtest/gtest.h>

namespace staticlm {
namespace {

TEST(OptionValueTest, ParsesAssignments) {
  const std::vector<std::string> args = {"use_fp16=true", "skip_node_op_set=rope,attention", "empty="};
  auto map = parse_option_assignments(args);
  ASSERT_TRUE(map.ok()) << map.status().to_string();
  ASSERT_EQ(map->size(), 3u);
  EXPECT_EQ(std::get<std::string>(map->at("skip_node_op_set").value), "rope,attention");
  EXPECT_EQ(map->at("empty").form, RawOptionValue::Form::kText);
  EXPECT_EQ(std::get<std::string>(map->at("empty").value), "");
}

TEST(OptionValueTest, RefusesMalformedAssignments) {
  for (const auto& [arg, expected] : std::vector<std::pair<std::string, std::string>>{
           {"use_fp16", "expected KEY=VALUE"}, {"=true", "expected KEY=VALUE"}}) {
    const std::vector<std::string> args = {arg};
    auto map = parse_option_assignments(args);
    ASSERT_FALSE(map.ok()) << arg;
    EXPECT_NE(map.status().message().find(expected), std::string::npos) << map.status().message();
  }
  const std::vector<std::string> twice = {"a=1", "a=2"};
  auto map = parse_option_assignments(twice);
  ASSERT_FALSE(map.ok());
  EXPECT_NE(map.status().message().find("'a' is given twice"), std::string::npos) << map.status().message();
}

TEST(OptionValueTest, ParsesJsonOptionsKeepingTheirJsonTypes) {
  auto map = parse_options_json(R"({"a": true, "b": 3, "c": 0.5, "d": "x", "e": ["p", "q"]})", "opts.json");
  ASSERT_TRUE(map.ok()) << map.status().to_string();
  EXPECT_EQ(map->at("a").form, RawOptionValue::Form::kBool);
  EXPECT_EQ(map->at("b").form, RawOptionValue::Form::kInt);
  EXPECT_EQ(map->at("c").form, RawOptionValue::Form::kFloat);
  EXPECT_EQ(map->at("d").form, RawOptionValue::Form::kString);
  EXPECT_EQ(std::get<std::vector<std::string>>(map->at("e").value), (std::vector<std::string>{"p", "q"}));
  EXPECT_EQ(map->at("d").origin, "opts.json");
  EXPECT_EQ(describe_raw_value(map->at("d")), "JSON string \"x\"");
}

TEST(OptionValueTest, RefusesJsonValuesNoOptionCanHold) {
  for (const auto& [text, expected] : std::vector<std::pair<std::string, std::string>>{
           {R"({"a": null})", "option 'a': expected a bool, number, string or array of strings, found null"},
           {R"({"a": {"b": 1}})", "option 'a'"},
           {R"({"a": [1]})", "expected an array of strings, found element 1"},
           {R"({"a": 1, "a": 2})", "a"},
           {R"([1, 2])", "opts.json"}}) {
    auto map = parse_options_json(text, "opts.json");
    ASSERT_FALSE(map.ok()) << text;
    EXPECT_NE(map.status().message().find(expected), std::string::npos) << map.status().message();
  }
}

TEST(OptionValueTest, MergeRefusesAKeyGivenInBothPlaces) {
  OptionMap file;
  file.emplace("use_fp16", RawOptionValue::text("true", "opts.json"));
  OptionMap cli;
  cli.emplace("use_fp16", RawOptionValue::text("false", "--option"));
  cli.emplace("debug", RawOptionValue::text("true"));
  Status merged = merge_options(file, cli);
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(merged.message().find("option 'use_fp16' is given twice (opts.json and --option)"), std::string::npos)
      << merged.message();
}

TEST(OptionValueTest, ValuesPrintForReports) {
  EXPECT_EQ(option_value_string(OptionValue(true)), "true");
  EXPECT_EQ(option_value_string(OptionValue(int64_t{-3})), "-3");
  EXPECT_EQ(option_value_string(OptionValue(0.5)), "0.5");
  EXPECT_EQ(option_value_string(OptionValue(std::string("burst"))), "burst");
  EXPECT_EQ(option_value_string(OptionValue(std::vector<std::string>{"a", "b"})), "{a,b}");
}

}  // namespace
}  // namespace staticlm
