// SPDX-License-Identifier: Apache-2.0
#include "staticlm/server/openai_json.h"

#include <algorithm>

#include "staticlm/server/completion_request.h"

namespace staticlm::server {
namespace {

double per_second(double count, double seconds) {
  return seconds > 0.0 ? count / seconds : 0.0;
}

}  // namespace

std::string dump_json_text(const Json& json) {
  return json.dump(-1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

ApiError api_error(const Status& status) {
  ApiError error;
  error.message = status.message();
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange: error.param = request_error_param(status); break;
    case StatusCode::kNotFound:
      error.http_status = 404;
      error.code = "not_found";
      break;
    case StatusCode::kResourceExhausted:
      error.http_status = 503;
      error.type = "server_busy_error";
      error.code = "server_busy";
      break;
    case StatusCode::kUnavailable:
      error.http_status = 503;
      error.type = "unavailable_error";
      break;
    default:
      error.http_status = 500;
      error.type = "server_error";
      break;
  }
  return error;
}

Json error_json(const ApiError& error) {
  Json body = {{"message", error.message},
               {"type", error.type},
               {"param", error.param.empty() ? Json(nullptr) : Json(error.param)},
               {"code", error.code.empty() ? Json(nullptr) : Json(error.code)}};
  return {{"error", std::move(body)}};
}

std::string_view finish_reason(StopReason reason) {
  switch (reason) {
    case StopReason::kMaxNewTokens:
    case StopReason::kContextFull: return "length";
    case StopReason::kEos:
    case StopReason::kStopString:
    case StopReason::kCancelled:
    case StopReason::kGrammarComplete: return "stop";
  }
  return "stop";
}

Json usage_json(const GenerationResult& result) {
  const auto prompt = static_cast<int64_t>(result.prompt_tokens.size());
  const auto completion = static_cast<int64_t>(result.tokens.size());
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", {{"cached_tokens", result.cached_prompt_tokens}}}};
}

Json timings_json(const GenerationResult& result) {
  const auto prefilled =
      static_cast<double>(result.prompt_tokens.size()) - static_cast<double>(result.cached_prompt_tokens);
  const auto predicted = static_cast<double>(result.tokens.size());
  // decode_seconds runs from the end of the prefill: sampling the first token and every step after.
  const double predicted_seconds = result.decode_seconds;
  Json timings = {{"cache_n", result.cached_prompt_tokens},
                  {"prompt_n", static_cast<int64_t>(prefilled)},
                  {"prompt_ms", result.prefill_seconds * 1e3},
                  {"prompt_per_second", per_second(prefilled, result.prefill_seconds)},
                  {"predicted_n", static_cast<int64_t>(predicted)},
                  {"predicted_ms", predicted_seconds * 1e3},
                  {"predicted_per_second", per_second(predicted, predicted_seconds)}};
  // As llama-server reports speculative decoding: tokens drafted, and of them accepted.
  if (result.speculation.checks > 0) {
    timings["draft_n"] = result.speculation.drafted;
    timings["draft_n_accepted"] = result.speculation.accepted;
  }
  return timings;
}

Json chat_choice_json(int64_t index, const GenerationResult& result, Json logprobs) {
  return {{"index", index},
          {"message", {{"role", "assistant"}, {"content", result.text}}},
          {"logprobs", std::move(logprobs)},
          {"finish_reason", finish_reason(result.stop_reason)}};
}

Json tool_calls_json(const std::vector<ToolCall>& calls, const std::string& call_id_prefix, bool delta) {
  Json out = Json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    Json call = {{"id", call_id_prefix + std::to_string(i)},
                 {"type", "function"},
                 {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    if (delta) {
      call["index"] = i;
    }
    out.push_back(std::move(call));
  }
  return out;
}

Json chat_tool_choice_json(int64_t index, const GenerationResult& result, const ParsedReply& reply,
                           const std::string& call_id_prefix, Json logprobs) {
  if (reply.calls.empty()) {
    return chat_choice_json(index, result, std::move(logprobs));
  }
  Json message = {{"role", "assistant"},
                  {"content", reply.content ? Json(*reply.content) : Json(nullptr)},
                  {"tool_calls", tool_calls_json(reply.calls, call_id_prefix, /*delta=*/false)}};
  return {{"index", index},
          {"message", std::move(message)},
          {"logprobs", std::move(logprobs)},
          {"finish_reason", "tool_calls"}};
}

Json text_choice_json(int64_t index, const GenerationResult& result, Json logprobs) {
  return {{"index", index},
          {"text", result.text},
          {"logprobs", std::move(logprobs)},
          {"finish_reason", finish_reason(result.stop_reason)}};
}

Json chat_completion_json(const CompletionHeader& header, Json choices, const GenerationResult& totals) {
  return {{"id", header.id},
          {"object", "chat.completion"},
          {"created", header.created},
          {"model", header.model},
          {"choices", std::move(choices)},
          {"usage", usage_json(totals)},
          {"timings", timings_json(totals)}};
}

Json text_completion_json(const CompletionHeader& header, Json choices, const GenerationResult& totals) {
  return {{"id", header.id},
          {"object", "text_completion"},
          {"created", header.created},
          {"model", header.model},
          {"choices", std::move(choices)},
          {"usage", usage_json(totals)},
          {"timings", timings_json(totals)}};
}

Json chat_chunk_json(const CompletionHeader& header, Json delta, Json finish, Json logprobs, int64_t index) {
  Json choice = {{"index", index},
                 {"delta", std::move(delta)},
                 {"logprobs", std::move(logprobs)},
                 {"finish_reason", std::move(finish)}};
  return {{"id", header.id},
          {"object", "chat.completion.chunk"},
          {"created", header.created},
          {"model", header.model},
          {"choices", Json::array({std::move(choice)})}};
}

Json text_chunk_json(const CompletionHeader& header, std::string_view text, Json finish, Json logprobs, int64_t index) {
  Json choice = {
      {"index", index}, {"text", text}, {"logprobs", std::move(logprobs)}, {"finish_reason", std::move(finish)}};
  return {{"id", header.id},
          {"object", "text_completion"},
          {"created", header.created},
          {"model", header.model},
          {"choices", Json::array({std::move(choice)})}};
}

int64_t text_characters(std::string_view text) {
  return std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<uint8_t>(c) & 0xC0) != 0x80; });
}

Json token_bytes(const std::string& text) {
  Json bytes = Json::array();
  for (char c : text) {
    bytes.push_back(static_cast<uint8_t>(c));
  }
  return bytes;
}

Json chat_logprobs_json(std::span<const TokenLogprob> entries, const TokenText& text) {
  Json content = Json::array();
  for (const TokenLogprob& entry : entries) {
    Json top = Json::array();
    for (const auto& [id, logprob] : entry.top) {
      const std::string piece = text(id);
      top.push_back({{"token", piece}, {"logprob", logprob}, {"bytes", token_bytes(piece)}});
    }
    const std::string piece = text(entry.token);
    content.push_back({{"token", piece},
                       {"logprob", entry.logprob},
                       {"bytes", token_bytes(piece)},
                       {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}};
}

Json text_logprobs_json(std::span<const TokenLogprob> entries, const TokenText& text, int64_t offset) {
  Json tokens = Json::array();
  Json token_logprobs = Json::array();
  Json top_logprobs = Json::array();
  Json text_offset = Json::array();
  for (const TokenLogprob& entry : entries) {
    const std::string piece = text(entry.token);
    tokens.push_back(piece);
    token_logprobs.push_back(entry.logprob);
    Json top = Json::object();
    for (const auto& [id, logprob] : entry.top) {
      top.emplace(text(id), logprob);  // two ids of the same text: the likelier (first) one stays
    }
    top_logprobs.push_back(std::move(top));
    text_offset.push_back(offset);
    offset += text_characters(piece);
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", std::move(top_logprobs)},
          {"text_offset", std::move(text_offset)}};
}

Json echo_logprobs_json(int32_t first, std::span<const TokenLogprob> entries, const TokenText& text) {
  const std::string piece = text(first);
  Json json = text_logprobs_json(entries, text, text_characters(piece));
  json["tokens"].insert(json["tokens"].begin(), piece);
  json["token_logprobs"].insert(json["token_logprobs"].begin(), nullptr);
  json["top_logprobs"].insert(json["top_logprobs"].begin(), nullptr);
  json["text_offset"].insert(json["text_offset"].begin(), 0);
  return json;
}

Json usage_chunk_json(const CompletionHeader& header, bool chat, const GenerationResult& result) {
  return {{"id", header.id},
          {"object", chat ? "chat.completion.chunk" : "text_completion"},
          {"created", header.created},
          {"model", header.model},
          {"choices", Json::array()},
          {"usage", usage_json(result)},
          {"timings", timings_json(result)}};
}

}  // namespace staticlm::server
