// SPDX-License-Identifier: Apache-2.0
// libFuzzer: chat template text as a user could ship it, parsed and rendered over a conversation
// with tools, under render limits small enough that every run stays fast. Anything but a Status is
// a bug (a crash, a hang, unbounded memory).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "staticlm/chat/jinja/json_values.h"
#include "staticlm/chat/jinja/template.h"

namespace {

const std::vector<std::pair<std::string, staticlm::jinja::Value>>& variables() {
  static const auto* bound = [] {
    const auto messages = nlohmann::ordered_json::parse(R"([
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": "What is 2 + 2?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "add", "arguments": {"a": 2, "b": 2}}}]},
      {"role": "tool", "content": "4", "tool_call_id": "c1"},
      {"role": "assistant", "content": "4"}])");
    const auto tools = nlohmann::ordered_json::parse(
        R"([{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}])");
    auto* out = new std::vector<std::pair<std::string, staticlm::jinja::Value>>{
        {"messages", staticlm::jinja::value_from_json(messages, 16).value()},
        {"tools", staticlm::jinja::value_from_json(tools, 16).value()},
        {"add_generation_prompt", staticlm::jinja::Value(true)},
        {"bos_token", staticlm::jinja::Value("<s>")},
        {"eos_token", staticlm::jinja::Value("</s>")},
    };
    return out;
  }();
  return *bound;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  auto parsed = staticlm::jinja::Template::parse(source);
  if (!parsed.ok()) {
    return 0;
  }
  staticlm::jinja::RenderLimits limits;
  limits.max_loop_iterations = 20'000;
  limits.max_output_bytes = 1u << 20;
  (void)parsed->render(variables(), limits);
  return 0;
}
