// SPDX-License-Identifier: Apache-2.0
#include "staticlm/chat/tool_calls.h"

#include <algorithm>

#include "staticlm/core/str_cat.h"
#include "staticlm/json/strict_json.h"
#include "staticlm/llm/grammar/json_schema_grammar.h"

namespace staticlm {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kOpenTag = "<tool_call>";
constexpr std::string_view kCloseTag = "</tool_call>";
constexpr std::string_view kListMark = "<|tool_call|>";
// Deeper arguments than a schema compiles are not a call anyone offered.
constexpr int kMaxCallDepth = 128;
constexpr size_t kMaxNameBytes = 64;

std::string_view arguments_key(ToolCallSyntax syntax) {
  return syntax == ToolCallSyntax::kParametersJson ? "parameters" : "arguments";
}

std::string_view trim(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) {
    return {};
  }
  return text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

bool valid_name(std::string_view name) {
  return !name.empty() && name.size() <= kMaxNameBytes && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

// `schema`'s local references re-rooted at `base`, where the schema is placed inside a larger one.
void rebase_references(Json& schema, const std::string& base) {
  if (schema.is_object()) {
    for (auto& [key, value] : schema.items()) {
      if (key == "$ref" && value.is_string() && value.get<std::string>().rfind('#', 0) == 0) {
        value = base + value.get<std::string>().substr(1);
      } else {
        rebase_references(value, base);
      }
    }
  } else if (schema.is_array()) {
    for (Json& item : schema) {
      rebase_references(item, base);
    }
  }
}

// One call's JSON as a schema: {"name": <this function>, "<arguments key>": <its parameters>}.
Json call_schema(const ToolFunction& function, size_t index, ToolCallSyntax syntax) {
  const std::string key(arguments_key(syntax));
  Json properties = Json::object();
  properties["name"] = Json{{"const", function.name}};
  properties[key] = Json{{"$ref", str_cat("#/$defs/tool-", index)}};
  return Json{{"type", "object"},
              {"properties", std::move(properties)},
              {"required", Json::array({"name", key})},
              {"additionalProperties", false}};
}

// JSON text, or discarded where it nests deeper than any call's arguments may.
Json parse_bounded(std::string_view text) {
  if (json_nesting_depth(text) > kMaxCallDepth) {
    return Json(Json::value_t::discarded);
  }
  return Json::parse(text, nullptr, /*allow_exceptions=*/false);
}

std::optional<ToolCall> call_from(const Json& call, ToolCallSyntax syntax, const std::vector<ToolFunction>& functions) {
  if (!call.is_object() || call.size() != 2) {
    return std::nullopt;
  }
  const auto name = call.find("name");
  const auto arguments = call.find(std::string(arguments_key(syntax)));
  if (name == call.end() || !name->is_string() || arguments == call.end() || !arguments->is_object()) {
    return std::nullopt;
  }
  const bool offered = std::any_of(functions.begin(), functions.end(),
                                   [&](const ToolFunction& f) { return f.name == name->get<std::string>(); });
  if (!offered) {
    return std::nullopt;
  }
  return ToolCall{name->get<std::string>(), arguments->dump()};
}

std::optional<ToolCall> parse_call(std::string_view text, ToolCallSyntax syntax,
                                   const std::vector<ToolFunction>& functions) {
  return call_from(parse_bounded(text), syntax, functions);
}

// Text whose calls open with a mark anywhere in the reply, rather than making the whole reply.
bool marked_anywhere(ToolCallSyntax syntax) {
  return syntax == ToolCallSyntax::kTaggedJson || syntax == ToolCallSyntax::kMarkedList;
}

}  // namespace

ToolCallSyntax tool_call_syntax(std::string_view template_source) {
  if (template_source.find(kOpenTag) != std::string_view::npos) {
    return ToolCallSyntax::kTaggedJson;
  }
  if (template_source.find(kListMark) != std::string_view::npos) {
    return ToolCallSyntax::kMarkedList;
  }
  if (template_source.find("\"parameters\": ") != std::string_view::npos &&
      template_source.find("tool_call") != std::string_view::npos) {
    return ToolCallSyntax::kParametersJson;
  }
  return ToolCallSyntax::kPlainJson;
}

std::string_view tool_call_syntax_name(ToolCallSyntax syntax) {
  switch (syntax) {
    case ToolCallSyntax::kTaggedJson: return "<tool_call> tags";
    case ToolCallSyntax::kMarkedList: return "<|tool_call|> list";
    case ToolCallSyntax::kParametersJson: return "{\"name\", \"parameters\"}";
    case ToolCallSyntax::kPlainJson: return "{\"name\", \"arguments\"}";
  }
  return "unknown";
}

bool tool_call_syntax_is_marked(ToolCallSyntax syntax) {
  return syntax != ToolCallSyntax::kPlainJson;
}

bool tool_call_syntax_takes_several(ToolCallSyntax syntax) {
  return marked_anywhere(syntax);
}

bool tool_call_trigger_at_start(ToolCallSyntax syntax) {
  return !marked_anywhere(syntax);
}

std::string_view tool_call_syntax_trigger(ToolCallSyntax syntax) {
  return syntax == ToolCallSyntax::kTaggedJson   ? kOpenTag
         : syntax == ToolCallSyntax::kMarkedList ? kListMark
                                                 : std::string_view("{");
}

Result<std::vector<ToolFunction>> parse_tool_functions(const Json& tools) {
  if (!tools.is_array() || tools.empty()) {
    return invalid_argument("'tools': expected a non-empty array of {\"type\": \"function\", \"function\": {...}}");
  }
  std::vector<ToolFunction> functions;
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& tool = tools[i];
    const std::string where = str_cat("'tools[", i, "]");
    if (!tool.is_object() || tool.value("type", Json()) != "function") {
      return invalid_argument(where,
                              "': expected {\"type\": \"function\", \"function\": {...}} (only function tools "
                              "are supported)");
    }
    auto function = tool.find("function");
    if (function == tool.end() || !function->is_object()) {
      return invalid_argument(where, ".function': expected an object with \"name\"");
    }
    auto name = function->find("name");
    if (name == function->end() || !name->is_string() || !valid_name(name->get<std::string>())) {
      return invalid_argument(where, ".function.name': expected 1 to 64 letters, digits, '_' or '-', found ",
                              name == function->end() ? std::string("nothing") : json_preview(*name));
    }
    for (const ToolFunction& earlier : functions) {
      if (earlier.name == name->get<std::string>()) {
        return invalid_argument(where, ".function.name': '", earlier.name, "' is offered twice");
      }
    }
    Json parameters = Json{{"type", "object"}, {"properties", Json::object()}, {"additionalProperties", false}};
    if (auto given = function->find("parameters"); given != function->end() && !given->is_null()) {
      if (!given->is_object()) {
        return invalid_argument(where, ".function.parameters': expected a JSON Schema object, found ",
                                json_preview(*given));
      }
      parameters = *given;
    }
    functions.push_back({name->get<std::string>(), std::move(parameters), i});
  }
  return functions;
}

Result<std::string> tool_call_gbnf(const std::vector<ToolFunction>& functions, ToolCallSyntax syntax, bool parallel) {
  if (functions.empty()) {
    return invalid_argument("tool call grammar: no function is offered");
  }
  Json defs = Json::object();
  Json calls = Json::array();
  for (size_t i = 0; i < functions.size(); ++i) {
    // Compiled alone first, so a refusal's JSON pointer is the tool's own.
    if (auto rules = json_schema_rules(functions[i].parameters, "arguments"); !rules.ok()) {
      return invalid_argument("'tools[", functions[i].index, "].function.parameters': ", rules.status().message());
    }
    Json parameters = functions[i].parameters;
    rebase_references(parameters, str_cat("#/$defs/tool-", i));
    defs[str_cat("tool-", i)] = std::move(parameters);
    calls.push_back(call_schema(functions[i], i, syntax));
  }
  Json schema = calls.size() == 1 ? std::move(calls[0]) : Json{{"anyOf", std::move(calls)}};
  schema["$defs"] = std::move(defs);
  STATICLM_ASSIGN_OR_RETURN(std::string rules, json_schema_rules(schema, "call"));
  if (parallel && !tool_call_syntax_takes_several(syntax)) {
    return invalid_argument("tool call grammar: the ", tool_call_syntax_name(syntax), " syntax has one call per reply");
  }
  if (syntax == ToolCallSyntax::kMarkedList) {
    return std::string(R"(root ::= "<|tool_call|>[" call )") + (parallel ? R"(("," " "? call)* )" : "") + "\"]\"\n" +
           rules;
  }
  if (syntax != ToolCallSyntax::kTaggedJson) {
    return "root ::= call\n" + rules;
  }
  const std::string block = R"("<tool_call>\n" call "\n</tool_call>")";
  return "root ::= " + block + (parallel ? " (\"\\n\" " + block + ")*" : std::string()) + "\n" + rules;
}

ParsedReply parse_tool_calls(std::string_view reply, ToolCallSyntax syntax,
                             const std::vector<ToolFunction>& functions) {
  ParsedReply unparsed{std::string(reply), {}};
  ParsedReply parsed;
  if (syntax == ToolCallSyntax::kMarkedList) {
    const size_t mark = reply.find(kListMark);
    if (mark == std::string_view::npos) {
      return unparsed;
    }
    const Json list = parse_bounded(reply.substr(mark + kListMark.size()));
    if (!list.is_array() || list.empty()) {
      return unparsed;
    }
    for (const Json& item : list) {
      std::optional<ToolCall> call = call_from(item, syntax, functions);
      if (!call) {
        return unparsed;
      }
      parsed.calls.push_back(std::move(*call));
    }
    if (const std::string_view before = trim(reply.substr(0, mark)); !before.empty()) {
      parsed.content = std::string(before);
    }
    return parsed;
  }
  if (syntax != ToolCallSyntax::kTaggedJson) {
    const std::string_view text = trim(reply);
    if (text.empty() || text.front() != '{') {
      return unparsed;
    }
    std::optional<ToolCall> call = parse_call(text, syntax, functions);
    if (!call) {
      return unparsed;
    }
    parsed.calls.push_back(std::move(*call));
    return parsed;
  }
  std::string content;
  size_t at = 0;
  while (true) {
    const size_t open = reply.find(kOpenTag, at);
    if (open == std::string_view::npos) {
      content += reply.substr(at);
      break;
    }
    const size_t close = reply.find(kCloseTag, open);
    if (close == std::string_view::npos) {
      return unparsed;
    }
    content += reply.substr(at, open - at);
    const size_t body = open + kOpenTag.size();
    std::optional<ToolCall> call = parse_call(reply.substr(body, close - body), syntax, functions);
    if (!call) {
      return unparsed;
    }
    parsed.calls.push_back(std::move(*call));
    at = close + kCloseTag.size();
  }
  if (parsed.calls.empty()) {
    return unparsed;
  }
  if (const std::string_view rest = trim(content); !rest.empty()) {
    parsed.content = std::string(rest);
  }
  return parsed;
}

std::string ToolCallHold::feed(std::string_view text) {
  text_ += text;
  if (forced_ || holding_) {
    return {};
  }
  size_t end = text_.size();
  if (released_) {
    // everything shown
  } else if (marked_anywhere(syntax_)) {
    const std::string_view mark = tool_call_syntax_trigger(syntax_);
    if (const size_t open = text_.find(mark, shown_); open != std::string::npos) {
      end = open;
      holding_ = true;
    } else {
      for (size_t keep = std::min(mark.size() - 1, text_.size()); keep > 0; --keep) {
        if (std::string_view(text_).substr(text_.size() - keep) == mark.substr(0, keep)) {
          end = text_.size() - keep;
          break;
        }
      }
    }
  } else {
    const size_t first = text_.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) {
      return {};
    }
    if (text_[first] == '{') {
      holding_ = true;
      return {};
    }
    released_ = true;
  }
  end = std::max(end, shown_);
  std::string shown = text_.substr(shown_, end - shown_);
  shown_ = end;
  return shown;
}

}  // namespace staticlm
