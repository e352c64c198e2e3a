// SPDX-License-Identifier: Apache-2.0
// staticlm's Jinja against Jinja itself: every case in tests/fixtures/chat_templates (rendered by
// python3-jinja2 configured as transformers configures it; scripts/make_chat_template_fixtures.py)
// must give the same bytes, or fail where Jinja failed.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "staticlm/chat/jinja/json_values.h"
#include "staticlm/chat/jinja/template.h"

namespace staticlm::jinja {
namespace {

const std::string kFixtures = std::string(STATICLM_SOURCE_DIR) + "/tests/fixtures/chat_templates/";

nlohmann::ordered_json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::ordered_json::parse(text.str());
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Value to_value(const nlohmann::ordered_json& json) {
  auto value = value_from_json(json, 64);
  EXPECT_TRUE(value.ok()) << value.status().to_string();
  return value.ok() ? *value : Value();
}

// Renders and compares; returns a description of the mismatch, or "" when staticlm agrees.
std::string compare(std::string_view source, const std::vector<std::pair<std::string, Value>>& variables,
                    const nlohmann::ordered_json& expected) {
  auto parsed = Template::parse(source);
  Result<std::string> rendered = parsed.ok() ? parsed->render(variables) : Result<std::string>(parsed.status());
  if (expected.contains("error")) {
    if (rendered.ok()) {
      return "Jinja failed (" + expected["message"].get<std::string>() + ") but staticlm rendered:\n" + *rendered;
    }
    return "";
  }
  if (!rendered.ok()) {
    return "staticlm failed: " + rendered.status().to_string();
  }
  const std::string want = expected["output"].get<std::string>();
  if (*rendered != want) {
    return "rendered:\n[" + *rendered + "]\nJinja:\n[" + want + "]";
  }
  return "";
}

TEST(JinjaParityTest, SemanticsCasesMatchJinja) {
  const auto fixture = read_json(kFixtures + "semantics_cases.json");
  int checked = 0;
  for (const auto& item : fixture["cases"]) {
    std::vector<std::pair<std::string, Value>> variables;
    for (const auto& [name, value] : item["context"].items()) {
      variables.emplace_back(name, to_value(value));
    }
    const std::string mismatch = compare(item["template"].get<std::string>(), variables, item);
    EXPECT_EQ(mismatch, "") << "template: " << item["template"].get<std::string>();
    ++checked;
  }
  EXPECT_GE(checked, 140);
}

TEST(JinjaParityTest, RealChatTemplatesMatchJinja) {
  const auto fixture = read_json(kFixtures + "chat_cases.json");
  int checked = 0;
  int failures = 0;
  for (const auto& item : fixture["cases"]) {
    const std::string name = item["template"].get<std::string>();
    std::vector<std::pair<std::string, Value>> variables = {
        {"messages", to_value(item["messages"])},
        {"tools", to_value(item["tools"])},
        {"documents", Value(NoneType{})},
        {"add_generation_prompt", Value(item["add_generation_prompt"].get<bool>())},
    };
    for (const auto& [token, text] : item["special_tokens"].items()) {
      variables.emplace_back(token, to_value(text));
    }
    if (item.contains("extra")) {
      for (const auto& [key, value] : item["extra"].items()) {
        variables.emplace_back(key, to_value(value));
      }
    }
    const std::string mismatch = compare(read_text(kFixtures + "templates/" + name + ".jinja"), variables, item);
    EXPECT_EQ(mismatch, "") << name << " / " << item["conversation"].get<std::string>()
                            << " / add_generation_prompt=" << item["add_generation_prompt"];
    ++checked;
    failures += item.contains("error") ? 1 : 0;
  }
  EXPECT_GE(checked, 120);
  EXPECT_GE(failures, 1);  // the corpus includes conversations a template refuses
}

}  // namespace
}  // namespace staticlm::jinja
