// SPDX-License-Identifier: Apache-2.0
// staticlm's Jinja against Jinja itself: every case in tests/fixtures/chat_templates (rendered by
// python3-jinja2 configured as transformers configures it; scripts/make_chat_template_fixtures.py)
// must give the same bytes, or fail where Jinja failed.
#include <ctime>
#include <fstream>
#include <iomanip>
#include <set>
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
    const std::string message = expected["message"].get<std::string>();
    if (rendered.ok()) {
      return "Jinja failed (" + message + ") but staticlm rendered:\n" + *rendered;
    }
    // A template's own raise_exception is the message meant for the user (Gemma's "System role not
    // supported"), so it has to arrive whole; other failures only have to be failures.
    if (expected["error"] == "TemplateError" && rendered.status().message().find(message) == std::string::npos) {
      return "Jinja raised '" + message + "' but staticlm said: " + rendered.status().to_string();
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

// strftime_now() at the moment the fixture was rendered at, so that a template printing today's
// date (Granite's) renders the same bytes on any day.
Value fixed_strftime_now(const std::string& iso_time) {
  std::tm moment{};
  std::istringstream in(iso_time);
  in >> std::get_time(&moment, "%Y-%m-%dT%H:%M:%S");
  EXPECT_FALSE(in.fail()) << "fixture 'now': " << iso_time;
  return Value::callable("strftime_now", [moment](Interpreter&, Arguments arguments) -> Result<Value> {
    if (arguments.positional.size() != 1 || !arguments.positional[0].is_string()) {
      return invalid_argument("strftime_now() takes one format string");
    }
    char buffer[256];
    const size_t written = std::strftime(buffer, sizeof(buffer), arguments.positional[0].as_string().c_str(), &moment);
    return Value(std::string(buffer, written));
  });
}

TEST(JinjaParityTest, RealChatTemplatesMatchJinja) {
  const auto fixture = read_json(kFixtures + "chat_cases.json");
  const Value strftime_now = fixed_strftime_now(fixture["now"].get<std::string>());
  std::set<std::string> dated;
  int checked = 0;
  int failures = 0;
  for (const auto& item : fixture["cases"]) {
    const std::string name = item["template"].get<std::string>();
    std::vector<std::pair<std::string, Value>> variables = {
        {"messages", to_value(item["messages"])},
        {"tools", to_value(item["tools"])},
        {"documents", Value(NoneType{})},
        {"add_generation_prompt", Value(item["add_generation_prompt"].get<bool>())},
        {"strftime_now", strftime_now},
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
    if (item.contains("output") && item["output"].get<std::string>().find("January 15, 2026") != std::string::npos) {
      dated.insert(name);
    }
  }
  EXPECT_GE(checked, 200);
  EXPECT_GE(failures, 1);  // the corpus includes conversations a template refuses
  EXPECT_TRUE(dated.contains("granite3_3")) << "Granite's template prints the fixed date";
}

}  // namespace
}  // namespace staticlm::jinja
