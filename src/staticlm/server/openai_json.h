// SPDX-License-Identifier: Apache-2.0
// The JSON the server answers with, shaped as OpenAI's API (and llama-server's `timings`
// extension): error objects, completions, streamed chunks, usage.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "staticlm/chat/tool_calls.h"
#include "staticlm/core/status.h"
#include "staticlm/llm/generator.h"

namespace staticlm::server {

using Json = nlohmann::ordered_json;

// JSON text; invalid UTF-8 in a string (a model can emit a stray byte) becomes U+FFFD instead
// of an exception.
std::string dump_json_text(const Json& json);

struct ApiError {
  int http_status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::string param;  // the request field at fault, "" for none
  std::string code;   // "" for none
};

// A library Status as the error a client sees: InvalidArgument / OutOfRange -> 400 naming the
// field (completion_request.h), ResourceExhausted -> 503, NotFound -> 404, anything else -> 500.
ApiError api_error(const Status& status);
// {"error": {"message", "type", "param", "code"}}
Json error_json(const ApiError& error);

// What every object of one completion shares.
struct CompletionHeader {
  std::string id;  // chatcmpl-... / cmpl-...
  int64_t created = 0;
  std::string model;
};

std::string_view finish_reason(StopReason reason);
Json usage_json(const GenerationResult& result);
// llama-server's per-request timings: prompt_n / prompt_ms / prompt_per_second (prefilled tokens,
// cached ones excluded), predicted_*, cache_n.
Json timings_json(const GenerationResult& result);

// One choice of a response: choice `index`'s generation; `logprobs` its own, from
// chat_logprobs_json / text_logprobs_json, or null.
Json chat_choice_json(int64_t index, const GenerationResult& result, Json logprobs = nullptr);
Json text_choice_json(int64_t index, const GenerationResult& result, Json logprobs = nullptr);
// A chat choice whose reply was parsed for tool calls: the message's content (null when there is
// only calls) and `tool_calls`, finish_reason "tool_calls" when there are calls.
Json chat_tool_choice_json(int64_t index, const GenerationResult& result, const ParsedReply& reply,
                           const std::string& call_id_prefix, Json logprobs = nullptr);
// OpenAI's tool_calls array: [{index, id, type: "function", function: {name, arguments}}], the
// ids `call_id_prefix` followed by the call's index; `index` only in a stream's delta.
Json tool_calls_json(const std::vector<ToolCall>& calls, const std::string& call_id_prefix, bool delta);
// A whole response of `choices`; `totals` counts the prompt once and every choice's tokens and
// times (usage and timings).
Json chat_completion_json(const CompletionHeader& header, Json choices, const GenerationResult& totals);
Json text_completion_json(const CompletionHeader& header, Json choices, const GenerationResult& totals);
// One streamed chunk of choice `index`; `finish` null until its last one; `logprobs` those of its
// tokens, or null.
Json chat_chunk_json(const CompletionHeader& header, Json delta, Json finish, Json logprobs = nullptr,
                     int64_t index = 0);
Json text_chunk_json(const CompletionHeader& header, std::string_view text, Json finish, Json logprobs = nullptr,
                     int64_t index = 0);

// Characters of UTF-8 text as a client counts them (code points; a piece of one counts where it
// starts): the unit of the completions API's text_offset.
int64_t text_characters(std::string_view text);

// A token's text in log-probabilities: the bytes it adds to generated text (a special token's
// own text); may be part of a UTF-8 character, which `bytes` shows whole.
using TokenText = std::function<std::string(int32_t id)>;
// A token's text as its bytes' values, OpenAI's `bytes`.
Json token_bytes(const std::string& text);
// Chat's `logprobs`: {"content": [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]}.
Json chat_logprobs_json(std::span<const TokenLogprob> entries, const TokenText& text);
// The completions API's: {tokens, token_logprobs, top_logprobs: [{token: logprob}], text_offset}, the
// offsets in characters from `offset` (the characters of text before these tokens).
Json text_logprobs_json(std::span<const TokenLogprob> entries, const TokenText& text, int64_t offset);
// The same for an echoed prompt and what follows it: `first` (the prompt's first token, whose
// log-probability and alternatives are null) before `entries`.
Json echo_logprobs_json(int32_t first, std::span<const TokenLogprob> entries, const TokenText& text);
// The chunk after the last choice when stream_options.include_usage: no choices, the usage.
Json usage_chunk_json(const CompletionHeader& header, bool chat, const GenerationResult& result);

}  // namespace staticlm::server
