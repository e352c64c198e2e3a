// SPDX-License-Identifier: Apache-2.0
// The JSON the server answers with, shaped as OpenAI's API (and llama-server's `timings`
// extension): error objects, completions, streamed chunks, usage.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

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

Json chat_completion_json(const CompletionHeader& header, const GenerationResult& result);
Json text_completion_json(const CompletionHeader& header, const GenerationResult& result);
// One streamed chunk; `finish` null until the last one.
Json chat_chunk_json(const CompletionHeader& header, Json delta, Json finish);
Json text_chunk_json(const CompletionHeader& header, std::string_view text, Json finish);
// The chunk after the last choice when stream_options.include_usage: no choices, the usage.
Json usage_chunk_json(const CompletionHeader& header, bool chat, const GenerationResult& result);

}  // namespace staticlm::server
