// SPDX-License-Identifier: Apache-2.0
// resolve_options over a small schema that uses every feature: a selector, each type, ranges,
// enums, routes, per-type options, an SDK-gated value and option, conflicts and requirements.
#include "staticlm/options/option_schema.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace staticlm {
namespace {

OptionSpec spec(std::string name, OptionType type, std::optional<OptionValue> default_value, std::string route) {
  OptionSpec s;
  s.name = std::move(name);
  s.type = type;
  s.default_value = std::move(default_value);
  s.required = !s.default_value.has_value();
  s.route = std::move(route);
  return s;
}

OptionSchema demo_schema() {
  OptionSchema schema;
  schema.backend_id = "demo";
  schema.selector = "kind";
  OptionSpec kind = spec("kind", OptionType::kEnum, std::string("alpha"), "common");
  kind.allowed = {{"alpha", "", {}}, {"beta", "", {}}, {"gamma", "", SdkVersion{3, 0, 0, 0}}};
  kind.constraints.push_back(
      {OptionConstraint::Kind::kRequires, {"gamma"}, "chip", {"c3"}, "only c3 has a gamma unit"});
  OptionSpec level = spec("level", OptionType::kInt, int64_t{3}, std::string(kRouteSelectedType));
  level.min_value = 0;
  level.max_value = 10;
  level.applies_to = {"alpha", "beta"};
  OptionSpec ratio = spec("ratio", OptionType::kFloat, 0.5, "common");
  ratio.min_value = 0.0;
  ratio.max_value = 1.0;
  OptionSpec mode = spec("mode", OptionType::kEnum, std::string("fast"), "alpha");
  mode.allowed = {{"fast", "", {}}, {"slow", "", {}}};
  mode.applies_to = {"alpha"};
  OptionSpec fancy = spec("fancy", OptionType::kBool, false, "beta");
  fancy.applies_to = {"beta"};
  fancy.min_sdk_version = SdkVersion{2, 5, 0, 0};
  OptionSpec online = spec("online", OptionType::kBool, false, "common");
  online.constraints.push_back({OptionConstraint::Kind::kConflicts, {}, "multi", {}, "multi needs offline prepare"});
  online.constraints.push_back({OptionConstraint::Kind::kConflicts, {}, "kind", {"gamma"}, "gamma is offline only"});
  OptionSpec multi = spec("multi", OptionType::kBool, false, "alpha");
  multi.applies_to = {"alpha"};
  OptionSpec chip = spec("chip", OptionType::kEnum, std::nullopt, "common");
  chip.allowed = {{"c1", "", {}}, {"c2", "", {}}, {"c3", "", {}}};
  schema.options = {kind,  level,
                    ratio, spec("label", OptionType::kString, std::string(""), "common"),
                    mode,  spec("tags", OptionType::kStringSet, std::vector<std::string>{}, "partitioner"),
                    fancy, online,
                    multi, chip};
  return schema;
}

SdkInfo sdk(std::optional<SdkVersion> version) {
  SdkInfo info;
  info.name = "Demo SDK";
  info.version = version;
  info.version_source = "DEMO_SDK_VERSION";
  info.unknown_reason = "set DEMO_SDK_VERSION";
  return info;
}

OptionMap texts(std::initializer_list<std::pair<std::string, std::string>> entries) {
  OptionMap map;
  for (const auto& [key, value] : entries) {
    map.emplace(key, RawOptionValue::text(value, "--option"));
  }
  return map;
}

Status resolve_error(const OptionMap& options, std::optional<SdkVersion> version = SdkVersion{2, 0, 0, 0}) {
  auto resolved = resolve_options(demo_schema(), options, sdk(version));
  EXPECT_FALSE(resolved.ok()) << "expected a refusal";
  return resolved.ok() ? ok_status() : resolved.status();
}

void expect_message(const Status& status, std::string_view expected) {
  EXPECT_NE(status.message().find(expected), std::string::npos) << "message: " << status.message();
}

TEST(OptionSchemaTest, SchemaIsConsistent) {
  EXPECT_TRUE(check_schema(demo_schema()).ok());
}

TEST(OptionSchemaTest, FillsDefaultsTypesGivenValuesAndResolvesRoutes) {
  auto resolved =
      resolve_options(demo_schema(), texts({{"chip", "c2"}, {"level", "7"}, {"tags", "b, a,b"}}), sdk(std::nullopt));
  ASSERT_TRUE(resolved.ok()) << resolved.status().to_string();
  EXPECT_EQ(resolved->selected_type(), "alpha");
  EXPECT_EQ(*resolved->get_int("level"), 7);
  EXPECT_TRUE(resolved->find("level")->given);
  EXPECT_EQ(resolved->find("level")->route, "alpha");  // "selected" resolved to the type
  EXPECT_DOUBLE_EQ(*resolved->get_float("ratio"), 0.5);
  EXPECT_FALSE(resolved->find("ratio")->given);
  EXPECT_EQ(*resolved->get_string_set("tags"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(*resolved->get_string("mode"), "fast");
  // Options of another type are not in effect at all.
  EXPECT_EQ(resolved->find("fancy"), nullptr);
  EXPECT_EQ(resolved->routed_to("partitioner").size(), 1u);
  // Asking with the wrong type is a bug, reported as such.
  EXPECT_EQ(resolved->get_bool("level").status().code(), StatusCode::kInternal);
}

TEST(OptionSchemaTest, JsonValuesMustHaveTheOptionsType) {
  OptionMap map;
  RawOptionValue level;
  level.form = RawOptionValue::Form::kString;
  level.value = std::string("7");
  level.origin = "opts.json";
  map.emplace("level", level);
  map.emplace("chip", RawOptionValue::text("c1"));
  Status status = resolve_error(map);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  expect_message(status, "option 'level' (opts.json): expected an int, found JSON string \"7\"");

  RawOptionValue ratio;
  ratio.form = RawOptionValue::Form::kInt;
  ratio.value = int64_t{1};
  ratio.origin = "opts.json";
  OptionMap ok = texts({{"chip", "c1"}});
  ok.emplace("ratio", ratio);  // an integer is a fine float
  EXPECT_TRUE(resolve_options(demo_schema(), ok, sdk(std::nullopt)).ok());
}

TEST(OptionSchemaTest, RefusesUnknownNamesWithSuggestions) {
  Status status = resolve_error(texts({{"chip", "c1"}, {"levle", "2"}}));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  expect_message(status, "unknown option 'levle' for backend 'demo' (did you mean 'level'?)");
}

TEST(OptionSchemaTest, RefusesWrongTypesRangesAndEnumValues) {
  expect_message(resolve_error(texts({{"chip", "c1"}, {"online", "yes"}})),
                 "option 'online' (--option): expected a bool (true or false), found 'yes'");
  expect_message(resolve_error(texts({{"chip", "c1"}, {"level", "2.5"}})),
                 "option 'level' (--option): expected an int");
  expect_message(resolve_error(texts({{"chip", "c1"}, {"level", "11"}})), "expected int in [0, 10], found '11'");
  expect_message(resolve_error(texts({{"chip", "c1"}, {"ratio", "1.5"}})), "expected float in [0, 1], found '1.5'");
  expect_message(resolve_error(texts({{"chip", "c1"}, {"ratio", "nan"}})), "expected a finite float");
  expect_message(resolve_error(texts({{"chip", "c1"}, {"mode", "fats"}})),
                 "option 'mode' (--option): 'fats' is not one of fast, slow (did you mean 'fast'?)");
  expect_message(resolve_error(texts({{"chip", "c1"}, {"tags", "a,,b"}})), "without empty items");
}

TEST(OptionSchemaTest, RefusesAnOptionOfAnotherBackendType) {
  Status status = resolve_error(texts({{"chip", "c1"}, {"kind", "beta"}, {"mode", "slow"}}));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  expect_message(status, "option 'mode' applies to kind alpha, not kind beta");
  expect_message(resolve_error(texts({{"chip", "c1"}, {"fancy", "true"}})),
                 "option 'fancy' applies to kind beta, not kind alpha (the default)");
}

TEST(OptionSchemaTest, RefusesAMissingRequiredOption) {
  Status status = resolve_error(texts({}));
  expect_message(status, "option 'chip' is required for backend 'demo' (one of c1, c2, c3)");
}

TEST(OptionSchemaTest, RefusesConflictsAndUnmetRequirements) {
  expect_message(resolve_error(texts({{"chip", "c1"}, {"online", "true"}, {"multi", "true"}})),
                 "option 'online' conflicts with 'multi': multi needs offline prepare");
  // online=false does not engage the rule.
  EXPECT_TRUE(
      resolve_options(demo_schema(), texts({{"chip", "c1"}, {"online", "false"}, {"multi", "true"}}), sdk(std::nullopt))
          .ok());
  const SdkVersion new_sdk{3, 1, 0, 0};
  expect_message(resolve_error(texts({{"chip", "c3"}, {"online", "true"}, {"kind", "gamma"}}), new_sdk),
                 "option 'online' conflicts with 'kind' = 'gamma': gamma is offline only");
  expect_message(resolve_error(texts({{"chip", "c1"}, {"kind", "gamma"}}), new_sdk),
                 "option 'kind' = 'gamma' requires 'chip' to be one of c3 (found 'c1'): only c3 has a gamma unit");
}

TEST(OptionSchemaTest, GatesValuesAndOptionsOnTheSdkVersion) {
  Status old_sdk = resolve_error(texts({{"chip", "c3"}, {"kind", "gamma"}}), SdkVersion{2, 9, 0, 0});
  EXPECT_EQ(old_sdk.code(), StatusCode::kFailedPrecondition);
  expect_message(old_sdk, "option 'kind' = 'gamma' needs Demo SDK >= 3.0.0, found 2.9.0 (from DEMO_SDK_VERSION)");
  EXPECT_TRUE(
      resolve_options(demo_schema(), texts({{"chip", "c3"}, {"kind", "gamma"}}), sdk(SdkVersion{3, 0, 0, 0})).ok());

  Status unknown = resolve_error(texts({{"chip", "c1"}, {"kind", "beta"}, {"fancy", "true"}}), std::nullopt);
  EXPECT_EQ(unknown.code(), StatusCode::kFailedPrecondition);
  expect_message(unknown, "option 'fancy' needs Demo SDK >= 2.5.0: Demo SDK version unknown (set DEMO_SDK_VERSION)");
  EXPECT_EQ(unknown.message().find("found"), std::string::npos) << "never a silent 'too old'";
  // A gated option left at its default needs no SDK.
  EXPECT_TRUE(resolve_options(demo_schema(), texts({{"chip", "c1"}, {"kind", "beta"}}), sdk(std::nullopt)).ok());
}

TEST(OptionSchemaTest, EffectiveSettingsReportGivenAndDefaulted) {
  auto resolved = resolve_options(demo_schema(), texts({{"chip", "c2"}, {"kind", "beta"}}), sdk(std::nullopt));
  ASSERT_TRUE(resolved.ok()) << resolved.status().to_string();
  nlohmann::json doc = nlohmann::json::parse(resolved->to_json());
  EXPECT_EQ(doc["backend"], "demo");
  EXPECT_EQ(doc["type"], "beta");
  std::map<std::string, nlohmann::json> by_name;
  for (const nlohmann::json& option : doc["options"]) {
    by_name[option["name"].get<std::string>()] = option;
  }
  EXPECT_EQ(by_name.count("mode"), 0u);
  EXPECT_EQ(by_name["chip"]["source"], "given");
  EXPECT_EQ(by_name["level"]["source"], "default");
  EXPECT_EQ(by_name["level"]["route"], "beta");
  EXPECT_EQ(by_name["fancy"]["value"], false);
}

TEST(OptionSchemaTest, CheckSchemaCatchesInconsistentSchemas) {
  OptionSchema bad = demo_schema();
  bad.options[1].default_value = std::string("three");
  Status status = check_schema(bad);
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  expect_message(status, "option 'level': default is not of type int");
  OptionSchema dangling = demo_schema();
  dangling.options[0].constraints[0].other = "nope";
  expect_message(check_schema(dangling), "constraint names unknown option 'nope'");
}

}  // namespace
}  // namespace staticlm
