// SPDX-License-Identifier: Apache-2.0
// The body of POST /v1/chat/completions and /v1/completions, parsed and checked before any work:
// every field OpenAI defines is either honoured or refused by name (n > 1, logprobs, tools on a
// template without them, ...), never silently ignored. Request
// bodies are untrusted: the parser bounds nesting and sizes and never throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "staticlm/chat/tool_calls.h"
#include "staticlm/core/result.h"
#include "staticlm/llm/generator.h"
#include "staticlm/llm/grammar/grammar_spec.h"
#include "staticlm/llm/sampling/sampling_choice.h"

namespace staticlm::server {

// OpenAI's /v1/chat/completions and /v1/completions, and llama-server's own /completion (its
// request fields and response shapes).
enum class Endpoint { kChatCompletions, kCompletions, kNativeCompletion };

// OpenAI's tool_choice: no calls, calls where the model makes them, at least one call of any
// tool, or a call of one named function.
enum class ToolChoice { kNone, kAuto, kRequired, kFunction };

struct RequestLimits {
  size_t max_stop_strings = 16;
  size_t max_messages = 4096;
  int max_json_depth = 64;
  bool template_uses_tools = false;  // the model's chat template reads `tools`
  int64_t vocab_size = 0;            // logit_bias's token ids lie in [0, vocab_size); 0: not checked here
};

struct CompletionRequest {
  Endpoint endpoint = Endpoint::kChatCompletions;
  // Chat: the messages with text content (parts joined), other fields kept for the template.
  nlohmann::ordered_json messages;
  nlohmann::ordered_json tools;                // null when absent
  std::vector<ToolFunction> tool_functions;    // `tools`, checked
  ToolChoice tool_choice = ToolChoice::kNone;  // `tool_choice`; absent: auto with tools, none without
  std::string tool_choice_name;                // the function a named tool_choice forces
  bool parallel_tool_calls = false;            // as llama-server: one call unless asked for more
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();  // chat_template_kwargs
  // Completions: the prompt as text, or as token ids.
  std::string prompt;
  std::optional<std::vector<int32_t>> prompt_tokens;
  std::optional<int64_t> max_tokens;  // absent: until the context is full
  // What the request sets; the rest comes from the program's generation_config, and a request
  // without a seed samples with a fresh random one (Engine::choose_sampling).
  SamplingOverrides sampling;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // Each generated token's log-probability and this many alternatives (chat: logprobs true and
  // top_logprobs; completions: logprobs N); -1: none.
  int top_logprobs = -1;
  // Completions: the reply's text starts with the prompt's, and with logprobs the prompt's tokens
  // are scored too (the first one gets null).
  bool echo = false;
  // Choices, generated one after another on one session (the prompt prefilled once), choice i
  // sampled with seed + i.
  int64_t n = 1;
  // Constrained output: response_format json_object / json_schema, or llama-server's `grammar` or
  // `json_schema`; `grammar_field` names the field it came from, for errors.
  std::optional<GrammarSpec> grammar;
  std::string grammar_field;
  // llama-server's /completion: the reply lists its token ids; end-of-sequence does not end it.
  bool return_tokens = false;
  bool ignore_eos = false;
};

// The most choices (`n`) one request may ask for: each is a whole generation.
inline constexpr int64_t kMaxChoices = 16;

// Fails with InvalidArgument for malformed JSON, a wrong type, a value out of range or an
// unsupported field. The message starts with the field's name in quotes ('temperature': ...), which
// request_error_param() extracts for the error object's `param`.
Result<CompletionRequest> parse_completion_request(std::string_view body, Endpoint endpoint,
                                                   const RequestLimits& limits);

// The field a request error names ("" when it names none).
std::string request_error_param(const Status& status);

// Parses a JSON request body (any endpoint): InvalidArgument for malformed JSON, a body that is not
// an object or nesting deeper than `max_depth`.
Result<nlohmann::ordered_json> parse_request_json(std::string_view body, int max_depth);

}  // namespace staticlm::server
