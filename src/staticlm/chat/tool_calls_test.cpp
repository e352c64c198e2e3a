// SPDX-License-Identifier: Apache-2.0
#include "staticlm/chat/tool_calls.h"

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/chat/chat_template.h"
#include "staticlm/llm/grammar/compiled_grammar.h"
#include "staticlm/llm/grammar/grammar_matcher.h"
#include "staticlm/llm/grammar/grammar_test_util.h"

namespace staticlm {
namespace {

using Json = nlohmann::ordered_json;

std::string read_template(const std::string& name) {
  std::ifstream in(std::string(STATICLM_SOURCE_DIR) + "/tests/fixtures/chat_templates/templates/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

using testing::byte_vocabulary;

const Json kTools = Json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
   "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                                    "unit": {"enum": ["c", "f"]}},
                  "required": ["city", "unit"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "tree",
   "parameters": {"$ref": "#/$defs/node",
                  "$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array",
                                                                                "items": {"$ref": "#/$defs/node"},
                                                                                "maxItems": 2}},
                                     "required": ["kids"], "additionalProperties": false}}}}},
  {"type": "function", "function": {"name": "now"}}
])");

std::vector<ToolFunction> functions() {
  Result<std::vector<ToolFunction>> parsed = parse_tool_functions(kTools);
  EXPECT_TRUE(parsed.ok()) << parsed.status().to_string();
  return parsed.ok() ? *parsed : std::vector<ToolFunction>();
}

std::shared_ptr<const CompiledGrammar> grammar(ToolCallSyntax syntax, bool parallel,
                                               const std::vector<ToolFunction>& offered) {
  Result<std::string> gbnf = tool_call_gbnf(offered, syntax, parallel);
  EXPECT_TRUE(gbnf.ok()) << gbnf.status().to_string();
  if (!gbnf.ok()) {
    return nullptr;
  }
  Result<std::shared_ptr<const CompiledGrammar>> compiled = compile_gbnf(*gbnf, byte_vocabulary());
  EXPECT_TRUE(compiled.ok()) << compiled.status().to_string() << "\n" << *gbnf;
  return compiled.ok() ? *compiled : nullptr;
}

bool matches(const std::shared_ptr<const CompiledGrammar>& g, std::string_view text) {
  return testing::grammar_matches(g, text);
}

// A random text the grammar allows, byte by byte, preferring bytes that close what is open.
std::string sample(const std::shared_ptr<const CompiledGrammar>& g, std::mt19937_64& rng) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    GrammarMatcher matcher(g);
    TokenBitmask mask(256);
    std::string text;
    while (!matcher.is_complete() && text.size() < 600) {
      if (!matcher.fill_mask(mask).ok()) {
        break;
      }
      std::vector<int> allowed;
      for (int b = 0; b < 256; ++b) {
        if (mask.test(b)) {
          allowed.push_back(b);
        }
      }
      if (allowed.empty() || (matcher.can_end() && rng() % 3 == 0)) {
        break;
      }
      std::vector<int> closing;
      for (int b : allowed) {
        if (std::string_view("\"}]<\n").find(static_cast<char>(b)) != std::string_view::npos) {
          closing.push_back(b);
        }
      }
      const std::vector<int>& from = !closing.empty() && rng() % 2 == 0 ? closing : allowed;
      const char byte = static_cast<char>(from[rng() % from.size()]);
      text += byte;
      EXPECT_TRUE(matcher.accept_bytes(std::string_view(&byte, 1)));
    }
    if (matcher.can_end()) {
      return text;
    }
  }
  ADD_FAILURE() << "no complete sample";
  return "";
}

TEST(ToolCalls, SyntaxFollowsTheTemplate) {
  EXPECT_EQ(tool_call_syntax(read_template("qwen3.jinja")), ToolCallSyntax::kTaggedJson);
  EXPECT_EQ(tool_call_syntax(default_chat_template_source()), ToolCallSyntax::kPlainJson);
  EXPECT_EQ(tool_call_syntax(read_template("deepseek_v3.jinja")), ToolCallSyntax::kPlainJson);
  EXPECT_EQ(tool_call_syntax(read_template("granite3_3.jinja")), ToolCallSyntax::kMarkedList);
  // Llama 3.1's way of writing a call.
  EXPECT_EQ(
      tool_call_syntax(
          R"({%- for tool_call in message.tool_calls -%}{{- '{"name": "' + tool_call.function.name + '", ' -}}{{- '"parameters": ' -}}{{- tool_call.function.arguments | tojson -}}{%- endfor -%})"),
      ToolCallSyntax::kParametersJson);
  EXPECT_TRUE(tool_call_syntax_is_marked(ToolCallSyntax::kTaggedJson));
  EXPECT_TRUE(tool_call_syntax_is_marked(ToolCallSyntax::kMarkedList));
  EXPECT_FALSE(tool_call_syntax_is_marked(ToolCallSyntax::kPlainJson));
  EXPECT_FALSE(tool_call_trigger_at_start(ToolCallSyntax::kMarkedList));
  EXPECT_TRUE(tool_call_trigger_at_start(ToolCallSyntax::kParametersJson));
}

TEST(ToolCalls, RefusesMalformedToolsNamingTheElement) {
  auto refusal = [](const std::string& tools) {
    Result<std::vector<ToolFunction>> parsed = parse_tool_functions(Json::parse(tools));
    EXPECT_FALSE(parsed.ok()) << tools;
    return parsed.ok() ? std::string() : parsed.status().message();
  };
  EXPECT_NE(refusal("[]").find("'tools': expected a non-empty array"), std::string::npos);
  EXPECT_NE(refusal(R"([{"type": "retrieval"}])").find("'tools[0]': expected"), std::string::npos);
  EXPECT_NE(refusal(R"([{"type": "function"}])").find("'tools[0].function'"), std::string::npos);
  EXPECT_NE(refusal(R"([{"type": "function", "function": {"name": "a b"}}])").find("'tools[0].function.name'"),
            std::string::npos);
  EXPECT_NE(refusal(R"([{"type": "function", "function": {"name": "f"}},
                        {"type": "function", "function": {"name": "f"}}])")
                .find("'tools[1].function.name': 'f' is offered twice"),
            std::string::npos);
  EXPECT_NE(refusal(R"([{"type": "function", "function": {"name": "f", "parameters": 3}}])")
                .find("'tools[0].function.parameters': expected a JSON Schema object"),
            std::string::npos);
  // A schema the compiler refuses reaches the template as it is; it is refused, naming the tool,
  // only where a call is to be constrained by it.
  auto offered = parse_tool_functions(Json::parse(
      R"([{"type": "function", "function": {"name": "g"}},
          {"type": "function", "function": {"name": "f", "parameters": {"properties": {"a": {"not": {}}}}}}])"));
  ASSERT_TRUE(offered.ok()) << offered.status().to_string();
  Result<std::string> gbnf = tool_call_gbnf({(*offered)[1]}, ToolCallSyntax::kTaggedJson, false);
  ASSERT_FALSE(gbnf.ok());
  const std::string unsupported = gbnf.status().message();
  EXPECT_NE(unsupported.find("'tools[1].function.parameters'"), std::string::npos) << unsupported;
  EXPECT_NE(unsupported.find("'not' at /properties/a"), std::string::npos) << unsupported;
}

TEST(ToolCalls, GrammarTakesCallsOfOfferedFunctionsWithValidArguments) {
  const std::vector<ToolFunction> offered = functions();
  ASSERT_EQ(offered.size(), 3u);
  auto tagged = grammar(ToolCallSyntax::kTaggedJson, false, offered);
  ASSERT_NE(tagged, nullptr);
  EXPECT_TRUE(matches(tagged,
                      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", "
                      "\"unit\": \"c\"}}\n</tool_call>"));
  EXPECT_TRUE(matches(tagged, "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"));
  // Recursion through the tool's own $defs, its references re-rooted.
  EXPECT_TRUE(matches(tagged,
                      "<tool_call>\n{\"name\": \"tree\", \"arguments\": {\"kids\": [{\"kids\": []}]}}\n"
                      "</tool_call>"));
  EXPECT_FALSE(matches(tagged, "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(matches(tagged,
                       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n"
                       "</tool_call>"));
  EXPECT_FALSE(matches(tagged, "<tool_call>\n{\"name\": \"now\", \"arguments\": {\"x\": 1}}\n</tool_call>"));
  EXPECT_FALSE(matches(tagged, "{\"name\": \"now\", \"arguments\": {}}"));
  const std::string two =
      "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
  EXPECT_FALSE(matches(tagged, two));
  EXPECT_TRUE(matches(grammar(ToolCallSyntax::kTaggedJson, true, offered), two));

  auto list = grammar(ToolCallSyntax::kMarkedList, false, offered);
  ASSERT_NE(list, nullptr);
  EXPECT_TRUE(matches(list, "<|tool_call|>[{\"name\": \"now\", \"arguments\": {}}]"));
  const std::string listed_two =
      "<|tool_call|>[{\"name\": \"now\", \"arguments\": {}}, {\"name\": \"tree\", \"arguments\": {\"kids\": []}}]";
  EXPECT_FALSE(matches(list, listed_two));
  EXPECT_TRUE(matches(grammar(ToolCallSyntax::kMarkedList, true, offered), listed_two));
  EXPECT_FALSE(matches(list, "<|tool_call|>[]"));

  auto parameters = grammar(ToolCallSyntax::kParametersJson, false, offered);
  ASSERT_NE(parameters, nullptr);
  EXPECT_TRUE(matches(parameters, "{\"name\": \"now\", \"parameters\": {}}"));
  EXPECT_FALSE(matches(parameters, "{\"name\": \"now\", \"arguments\": {}}"));
  EXPECT_FALSE(tool_call_gbnf(offered, ToolCallSyntax::kPlainJson, /*parallel=*/true).ok());
  // One named function: only it.
  auto named = grammar(ToolCallSyntax::kPlainJson, false, {offered[2]});
  EXPECT_TRUE(matches(named, "{\"name\": \"now\", \"arguments\": {}}"));
  EXPECT_FALSE(matches(named, "{\"name\": \"tree\", \"arguments\": {\"kids\": []}}"));
}

// Whatever the grammar lets a model write parses back into the calls it names.
TEST(ToolCalls, SampledCallsParseBack) {
  const std::vector<ToolFunction> offered = functions();
  std::mt19937_64 rng(7);
  for (const ToolCallSyntax syntax : {ToolCallSyntax::kTaggedJson, ToolCallSyntax::kMarkedList,
                                      ToolCallSyntax::kParametersJson, ToolCallSyntax::kPlainJson}) {
    const bool parallel = tool_call_syntax_takes_several(syntax);
    auto g = grammar(syntax, parallel, offered);
    ASSERT_NE(g, nullptr);
    for (int i = 0; i < 40; ++i) {
      const std::string text = sample(g, rng);
      const ParsedReply reply = parse_tool_calls(text, syntax, offered);
      ASSERT_FALSE(reply.calls.empty()) << text;
      EXPECT_FALSE(reply.content.has_value()) << text;
      for (const ToolCall& call : reply.calls) {
        const Json arguments = Json::parse(call.arguments);
        EXPECT_TRUE(arguments.is_object()) << text;
        if (call.name == "get_weather") {
          EXPECT_TRUE(arguments.contains("city") && arguments.contains("unit")) << text;
        }
      }
    }
  }
}

TEST(ToolCalls, ParsesRepliesAndLeavesTextThatIsNoCall) {
  const std::vector<ToolFunction> offered = functions();
  ParsedReply reply = parse_tool_calls(
      "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"c\"}}"
      "\n</tool_call>\n<tool_call>{\"name\":\"now\",\"arguments\":{}}</tool_call>",
      ToolCallSyntax::kTaggedJson, offered);
  ASSERT_EQ(reply.calls.size(), 2u);
  EXPECT_EQ(reply.content, "Let me look.");
  EXPECT_EQ(reply.calls[0].name, "get_weather");
  EXPECT_EQ(reply.calls[0].arguments, R"({"city":"Oslo","unit":"c"})");
  EXPECT_EQ(reply.calls[1].arguments, "{}");

  // Not a call: no tags, an unclosed tag, an unknown function, arguments that are not an object.
  for (const std::string& text :
       {std::string("It is sunny."), std::string("<tool_call>\n{\"name\": \"now\", \"arguments\": {}}"),
        std::string("<tool_call>{\"name\": \"rm\", \"arguments\": {}}</tool_call>"),
        std::string("<tool_call>{\"name\": \"now\", \"arguments\": 3}</tool_call>"),
        std::string("<tool_call>") + std::string(300, '[') + "</tool_call>"}) {
    reply = parse_tool_calls(text, ToolCallSyntax::kTaggedJson, offered);
    EXPECT_TRUE(reply.calls.empty()) << text;
    EXPECT_EQ(reply.content, text);
  }
  reply = parse_tool_calls(
      "I will look.<|tool_call|>[{\"name\": \"now\", \"arguments\": {}}, "
      "{\"name\": \"tree\", \"arguments\": {\"kids\": []}}]\n",
      ToolCallSyntax::kMarkedList, offered);
  ASSERT_EQ(reply.calls.size(), 2u);
  EXPECT_EQ(reply.content, "I will look.");
  EXPECT_EQ(reply.calls[1].name, "tree");
  for (const std::string& text : {std::string("<|tool_call|>[]"), std::string("<|tool_call|>[{\"name\": \"now\"}]"),
                                  std::string("<|tool_call|>[{\"name\": \"now\", \"arguments\": {}}] more")}) {
    reply = parse_tool_calls(text, ToolCallSyntax::kMarkedList, offered);
    EXPECT_TRUE(reply.calls.empty()) << text;
    EXPECT_EQ(reply.content, text);
  }
  reply = parse_tool_calls(" {\"name\": \"now\", \"parameters\": {}}\n", ToolCallSyntax::kParametersJson, offered);
  ASSERT_EQ(reply.calls.size(), 1u);
  EXPECT_FALSE(reply.content.has_value());
  reply = parse_tool_calls("{\"name\": \"now\", \"arguments\": {}} and more", ToolCallSyntax::kPlainJson, offered);
  EXPECT_TRUE(reply.calls.empty());
}

TEST(ToolCalls, HoldShowsTextUntilACallMayBegin) {
  ToolCallHold tagged(ToolCallSyntax::kTaggedJson, /*forced=*/false);
  EXPECT_EQ(tagged.feed("Sure"), "Sure");
  EXPECT_EQ(tagged.feed(", <"), ", ");  // "<" may begin "<tool_call>"
  EXPECT_EQ(tagged.feed("b>"), "<b>");
  EXPECT_EQ(tagged.feed(" <tool"), " ");
  EXPECT_EQ(tagged.feed("_call>\n{"), "");
  EXPECT_EQ(tagged.feed("\"name\""), "");
  EXPECT_EQ(tagged.held(), "<tool_call>\n{\"name\"");

  ToolCallHold list(ToolCallSyntax::kMarkedList, /*forced=*/false);
  EXPECT_EQ(list.feed("Yes <tool_call> <|"), "Yes <tool_call> ");
  EXPECT_EQ(list.feed("tool_call|>["), "");
  EXPECT_EQ(list.held(), "<|tool_call|>[");

  ToolCallHold json(ToolCallSyntax::kParametersJson, /*forced=*/false);
  EXPECT_EQ(json.feed(" \n"), "");
  EXPECT_EQ(json.feed("Hello"), " \nHello");
  EXPECT_EQ(json.feed(" {"), " {");
  ToolCallHold call(ToolCallSyntax::kParametersJson, /*forced=*/false);
  EXPECT_EQ(call.feed("{\"name\""), "");
  EXPECT_EQ(call.held(), "{\"name\"");

  ToolCallHold forced(ToolCallSyntax::kTaggedJson, /*forced=*/true);
  EXPECT_EQ(forced.feed("anything"), "");
  EXPECT_EQ(forced.held(), "anything");
}

}  // namespace
}  // namespace staticlm
