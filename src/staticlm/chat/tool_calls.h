// SPDX-License-Identifier: Apache-2.0
// Tool calls in a chat template's own syntax: the grammar that forces a call of the tools a
// request offers (OpenAI's tool_choice "required" or a named function), its arguments held to each
// tool's `parameters` JSON Schema, and the parse of a reply back into calls. The syntax is the one
// the template writes an assistant's tool_calls in, so a call fed back in the conversation reads
// as the model was trained to see it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "staticlm/core/result.h"

namespace staticlm {

enum class ToolCallSyntax {
  // <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>, one block per call (Hermes,
  // Qwen 2.5 / 3, SmolLM3).
  kTaggedJson,
  // <|tool_call|>[{"name": ..., "arguments": {...}}, ...] after any text (Granite 3).
  kMarkedList,
  // {"name": ..., "parameters": {...}} as the whole reply (Llama 3.1 / 3.2).
  kParametersJson,
  // {"name": ..., "arguments": {...}} as the whole reply: a template with no syntax of its own.
  kPlainJson,
};

// The syntax `template_source` writes tool calls in; kPlainJson when it has none of the others.
ToolCallSyntax tool_call_syntax(std::string_view template_source);
std::string_view tool_call_syntax_name(ToolCallSyntax syntax);
// Whether a reply in `syntax` can be told from text without a grammar (tool_choice "auto").
bool tool_call_syntax_is_marked(ToolCallSyntax syntax);
// Where a marked syntax's call begins: "<tool_call>" or "<|tool_call|>" anywhere, or "{" opening
// the reply (the grammar's trigger under tool_choice "auto").
std::string_view tool_call_syntax_trigger(ToolCallSyntax syntax);
// Whether the trigger must open the reply (the JSON syntaxes) rather than appear anywhere.
bool tool_call_trigger_at_start(ToolCallSyntax syntax);
// Whether one reply may make several calls in `syntax` (blocks one after another, or a list).
bool tool_call_syntax_takes_several(ToolCallSyntax syntax);

struct ToolFunction {
  std::string name;
  nlohmann::ordered_json parameters;  // a JSON Schema; an empty object's when the tool gave none
  size_t index = 0;                   // in `tools`, for messages
};

// OpenAI's `tools`: [{"type": "function", "function": {"name", "description", "parameters",
// "strict"}}]. InvalidArgument naming the element ("'tools[1].function.name': ...") otherwise.
// The parameters' schemas are compiled only where a call is constrained (tool_call_gbnf): tools
// that only reach the template (tool_choice "none") may use keywords the compiler refuses.
Result<std::vector<ToolFunction>> parse_tool_functions(const nlohmann::ordered_json& tools);

// GBNF whose texts are calls, in `syntax`, of one of `functions` with arguments valid against its
// parameters: exactly one call, or with `parallel` (where the syntax takes several) one or more.
// InvalidArgument "'tools[i].function.parameters': json_schema: ..." for a schema the compiler
// refuses, its JSON pointer the tool's own.
Result<std::string> tool_call_gbnf(const std::vector<ToolFunction>& functions, ToolCallSyntax syntax, bool parallel);

struct ToolCall {
  std::string name;
  std::string arguments;  // the arguments object as JSON text, as OpenAI returns it
};

struct ParsedReply {
  std::optional<std::string> content;  // the text outside the calls; none when only calls
  std::vector<ToolCall> calls;
};

// The calls a reply makes in `syntax` of the `functions` offered. A call that does not parse, or
// names no offered function, leaves the whole reply as content with no calls.
ParsedReply parse_tool_calls(std::string_view reply, ToolCallSyntax syntax, const std::vector<ToolFunction>& functions);

// A streamed reply's text, shown as it comes until it may be a call: a forced call holds it all;
// a syntax marked anywhere shows the text before its mark (holding back a tail that may begin
// one); the JSON syntaxes hold a reply whose first character is "{" and show any other.
class ToolCallHold {
 public:
  ToolCallHold(ToolCallSyntax syntax, bool forced) : syntax_(syntax), forced_(forced) {}

  // Takes the next piece of the reply; returns the text that can be shown now.
  std::string feed(std::string_view text);
  // What was fed and not shown: the part of the reply to parse for calls when it ends.
  std::string_view held() const { return std::string_view(text_).substr(shown_); }

 private:
  ToolCallSyntax syntax_;
  bool forced_;
  std::string text_;
  size_t shown_ = 0;
  bool holding_ = false;   // a call may have begun: nothing more is shown
  bool released_ = false;  // a JSON syntax's reply is text: everything is shown
};

}  // namespace staticlm
