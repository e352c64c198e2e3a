// SPDX-License-Identifier: Apache-2.0
#include "staticlm/server/completion_request.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "staticlm/core/utf8.h"
#include "staticlm/json/strict_json.h"

namespace staticlm::server {
namespace {

using Json = nlohmann::ordered_json;

// Fields each endpoint understands; anything else is refused by name, as OpenAI does.
constexpr std::string_view kCommonFields[] = {
    "model", "max_tokens", "temperature", "top_p", "top_k", "min_p", "seed", "stop", "stream", "stream_options", "n",
    "logprobs", "top_logprobs", "frequency_penalty", "presence_penalty", "repeat_penalty", "logit_bias", "user",
    "grammar", "json_schema",
    // Accepted and ignored: they do not change the output.
    "store", "metadata", "service_tier",
    // llama-server's: mapped onto the sampler, or refused
    // by name where they would change what it does.
    "n_predict", "cache_prompt", "repeat_last_n", "typical_p", "mirostat", "mirostat_tau", "mirostat_eta", "n_probs"};
constexpr std::string_view kChatFields[] = {
    "messages",        "max_completion_tokens", "tools", "tool_choice", "parallel_tool_calls",
    "response_format", "chat_template_kwargs"};
constexpr std::string_view kCompletionFields[] = {"prompt", "echo", "suffix", "best_of"};
constexpr std::string_view kNativeFields[] = {"prompt", "return_tokens", "ignore_eos", "id_slot"};
constexpr std::string_view kRoles[] = {"system", "developer", "user", "assistant", "tool"};

template <size_t N>
bool one_of(std::string_view name, const std::string_view (&names)[N]) {
  for (std::string_view candidate : names) {
    if (candidate == name) {
      return true;
    }
  }
  return false;
}

Status field_error(std::string_view field, std::string_view message) {
  return invalid_argument("'", field, "': ", message);
}

Status type_error(std::string_view field, std::string_view expected, const Json& found) {
  return invalid_argument("'", field, "': expected ", expected, ", found ", found.type_name());
}

Result<std::optional<double>> number_in(const Json& body, std::string_view field, double low, double high) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) {
    return std::optional<double>();
  }
  if (!it->is_number()) {
    return type_error(field, "a number", *it);
  }
  const double value = it->get<double>();
  if (!(value >= low && value <= high)) {
    return invalid_argument("'", field, "': expected a number in [", low, ", ", high, "], found ", value);
  }
  return std::optional<double>(value);
}

Result<std::optional<int64_t>> integer(const Json& body, std::string_view field, int64_t low, int64_t high) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) {
    return std::optional<int64_t>();
  }
  if (!it->is_number_integer()) {
    return type_error(field, "an integer", *it);
  }
  const bool beyond_int64 =
      it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  const int64_t value = beyond_int64 ? 0 : it->get<int64_t>();
  if (beyond_int64 || value < low || value > high) {
    return invalid_argument("'", field, "': expected an integer in [", low, ", ", high, "], found ", it->dump());
  }
  return std::optional<int64_t>(value);
}

Result<bool> boolean(const Json& body, std::string_view field, bool fallback) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) {
    return fallback;
  }
  if (!it->is_boolean()) {
    return type_error(field, "a boolean", *it);
  }
  return it->get<bool>();
}

Status check_text(std::string_view field, const std::string& text) {
  if (!utf8_is_valid(text)) {
    return field_error(field, "not valid UTF-8");
  }
  return ok_status();
}

// OpenAI's content: a string, or a list of parts of which only {"type": "text"} is supported here.
Result<std::string> message_text(const Json& content, std::string_view field) {
  if (content.is_string()) {
    return content.get<std::string>();
  }
  if (!content.is_array()) {
    return type_error(field, "a string or an array of content parts", content);
  }
  std::string text;
  for (const Json& part : content) {
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      return field_error(field, "expected content parts {\"type\": \"text\", \"text\": string}");
    }
    const std::string type = part["type"].get<std::string>();
    if (type != "text") {
      return field_error(field, str_cat("content of type '", type, "' is not supported (text only)"));
    }
    if (!part.contains("text") || !part["text"].is_string()) {
      return field_error(field, "a text part needs a string \"text\"");
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

Result<Json> parse_messages(const Json& body, const RequestLimits& limits) {
  auto it = body.find("messages");
  if (it == body.end()) {
    return field_error("messages", "required");
  }
  if (!it->is_array() || it->empty()) {
    return field_error("messages", "expected a non-empty array of messages");
  }
  if (it->size() > limits.max_messages) {
    return field_error("messages", str_cat("at most ", limits.max_messages, " messages, found ", it->size()));
  }
  Json messages = Json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& message = (*it)[i];
    const std::string where = str_cat("messages[", i, "]");
    if (!message.is_object()) {
      return type_error(where, "an object", message);
    }
    auto role = message.find("role");
    if (role == message.end() || !role->is_string()) {
      return field_error(where + ".role", "expected one of system, developer, user, assistant, tool");
    }
    if (!one_of(role->get<std::string>(), kRoles)) {
      return field_error(where + ".role", str_cat("expected one of system, developer, user, assistant, tool, found '",
                                                  role->get<std::string>(), "'"));
    }
    Json normalized = message;
    auto content = message.find("content");
    const bool may_omit = role->get<std::string>() == "assistant" && message.contains("tool_calls");
    if (content == message.end() || content->is_null()) {
      if (!may_omit) {
        return field_error(where + ".content", "required");
      }
      normalized["content"] = nullptr;
    } else {
      STATICLM_ASSIGN_OR_RETURN(std::string text, message_text(*content, where + ".content"));
      STATICLM_RETURN_IF_ERROR(check_text(where + ".content", text));
      normalized["content"] = std::move(text);
    }
    messages.push_back(std::move(normalized));
  }
  return messages;
}

Status parse_stop(const Json& body, const RequestLimits& limits, std::vector<std::string>& stop) {
  auto it = body.find("stop");
  if (it == body.end() || it->is_null()) {
    return ok_status();
  }
  if (it->is_string()) {
    stop.push_back(it->get<std::string>());
  } else if (it->is_array()) {
    for (const Json& item : *it) {
      if (!item.is_string()) {
        return type_error("stop", "a string or an array of strings", item);
      }
      stop.push_back(item.get<std::string>());
    }
  } else {
    return type_error("stop", "a string or an array of strings", *it);
  }
  if (stop.size() > limits.max_stop_strings) {
    return field_error("stop", str_cat("at most ", limits.max_stop_strings, " stop strings, found ", stop.size()));
  }
  for (const std::string& text : stop) {
    if (text.empty()) {
      return field_error("stop", "a stop string is empty");
    }
    STATICLM_RETURN_IF_ERROR(check_text("stop", text));
  }
  return ok_status();
}

// Chat: `logprobs` (a boolean) and `top_logprobs` (0-20, with logprobs true), as OpenAI has them;
// completions: `logprobs` N (0-20; OpenAI's legacy API allows 5). -1 when none is asked for.
Result<int> read_logprobs(const Json& body, Endpoint endpoint) {
  if (endpoint == Endpoint::kNativeCompletion) {
    STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> probs, integer(body, "n_probs", 0, kMaxTopLogprobs));
    return probs && *probs > 0 ? static_cast<int>(*probs) : -1;
  }
  if (endpoint == Endpoint::kChatCompletions) {
    STATICLM_ASSIGN_OR_RETURN(const bool wanted, boolean(body, "logprobs", false));
    STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> top, integer(body, "top_logprobs", 0, kMaxTopLogprobs));
    if (top && !wanted) {
      return field_error("top_logprobs", "needs \"logprobs\": true");
    }
    return wanted ? static_cast<int>(top.value_or(0)) : -1;
  }
  if (auto it = body.find("logprobs"); it != body.end() && it->is_boolean()) {
    return type_error("logprobs", "an integer (how many alternatives per token)", *it);
  }
  STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> top, integer(body, "logprobs", 0, kMaxTopLogprobs));
  if (auto it = body.find("top_logprobs"); it != body.end() && !it->is_null()) {
    return field_error("top_logprobs", "is a chat field; the completions API takes \"logprobs\": N");
  }
  return top ? static_cast<int>(*top) : -1;
}

// The fields accepted only with the value that means "off", refused otherwise by name.
Status refuse_unsupported(const Json& body, Endpoint endpoint, const RequestLimits& limits) {
  if (auto it = body.find("n_probs");
      endpoint != Endpoint::kNativeCompletion && it != body.end() && !it->is_null() && *it != 0) {
    return field_error("n_probs", "is /completion's: here ask for logprobs");
  }
  if (auto it = body.find("typical_p"); it != body.end() && !it->is_null() && *it != 1 && *it != 1.0) {
    return field_error("typical_p", "locally typical sampling is not supported (1 = off)");
  }
  if (auto it = body.find("mirostat"); it != body.end() && !it->is_null() && *it != 0) {
    return field_error("mirostat", "mirostat sampling is not supported (0 = off)");
  }
  if (endpoint == Endpoint::kChatCompletions) {
    const bool has_tools = body.contains("tools") && !body["tools"].is_null();
    if (has_tools) {
      if (!body["tools"].is_array()) {
        return type_error("tools", "an array", body["tools"]);
      }
      if (!limits.template_uses_tools) {
        return field_error("tools", "this model's chat template does not support tools");
      }
    }
  } else {
    STATICLM_ASSIGN_OR_RETURN(const bool echo, boolean(body, "echo", false));
    if (echo && body.value("stream", false) == true && body.contains("logprobs") && !body["logprobs"].is_null()) {
      return field_error("echo", "with logprobs, the prompt's log-probabilities are not streamed: ask without stream");
    }
    if (auto it = body.find("suffix"); it != body.end() && !it->is_null() && *it != "") {
      return field_error("suffix", "a suffix (fill in the middle) is not supported");
    }
    STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> best_of,
                              integer(body, "best_of", 1, std::numeric_limits<int64_t>::max()));
    if (best_of && *best_of != 1) {
      return field_error("best_of", "only best_of = 1 is supported");
    }
  }
  return ok_status();
}

// OpenAI's {"token id": bias} object, or llama-server's [[token id, bias | false], ...] (false
// bans the token, as a bias of -100 does).
Result<std::optional<std::vector<std::pair<int32_t, float>>>> parse_logit_bias(const Json& body,
                                                                               const RequestLimits& limits) {
  auto it = body.find("logit_bias");
  if (it == body.end() || it->is_null()) {
    return std::optional<std::vector<std::pair<int32_t, float>>>();
  }
  std::vector<std::pair<int32_t, float>> biases;
  auto add = [&](std::string_view where, int64_t id, const Json& bias) -> Status {
    const std::string field = str_cat("logit_bias.", where);
    if (limits.vocab_size > 0 && (id < 0 || id >= limits.vocab_size)) {
      return field_error(field, str_cat("token id ", id, " is outside the vocabulary [0, ", limits.vocab_size, ")"));
    }
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
      return field_error(field, str_cat("expected a token id in [0, 2^31), found ", id));
    }
    if (bias == false) {
      biases.emplace_back(static_cast<int32_t>(id), -100.0f);
      return ok_status();
    }
    if (!bias.is_number() || !(bias.get<double>() >= -100.0 && bias.get<double>() <= 100.0)) {
      return field_error(field, str_cat("expected a bias in [-100, 100], found ", bias.dump()));
    }
    for (const auto& [seen, unused] : biases) {
      if (seen == id) {
        return field_error(field, str_cat("token id ", id, " is given twice"));
      }
    }
    biases.emplace_back(static_cast<int32_t>(id), bias.get<float>());
    return ok_status();
  };
  if (it->is_object()) {
    for (const auto& [key, bias] : it->items()) {
      int64_t id = 0;
      const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), id);
      if (error != std::errc() || end != key.data() + key.size() || key.empty()) {
        return field_error(str_cat("logit_bias.", key), "expected a token id (a decimal integer) as the key");
      }
      STATICLM_RETURN_IF_ERROR(add(key, id, bias));
    }
  } else if (it->is_array()) {
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& pair = (*it)[i];
      if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer()) {
        return field_error(str_cat("logit_bias[", i, "]"), "expected a [token id, bias] pair");
      }
      STATICLM_RETURN_IF_ERROR(add(str_cat(i), pair[0].get<int64_t>(), pair[1]));
    }
  } else {
    return type_error("logit_bias", "an object of token id to bias", *it);
  }
  return std::optional(std::move(biases));
}

// OpenAI's response_format ({"type": "text" | "json_object" | "json_schema"}), llama-server's
// `grammar` (GBNF text) and `json_schema` (a schema): at most one of them constrains the output.
Status parse_constraint(const Json& body, Endpoint endpoint, CompletionRequest& request) {
  auto take = [&](std::string_view field, GrammarSpec spec) -> Status {
    if (request.grammar) {
      return field_error(field, str_cat("give one of response_format, grammar and json_schema (", request.grammar_field,
                                        " is given too)"));
    }
    request.grammar = std::move(spec);
    request.grammar_field = std::string(field);
    return ok_status();
  };
  auto schema_text = [](const Json& schema) { return schema.dump(-1, ' ', false, Json::error_handler_t::replace); };
  if (auto it = body.find("response_format");
      endpoint == Endpoint::kChatCompletions && it != body.end() && !it->is_null()) {
    if (!it->is_object() || !it->contains("type") || !(*it)["type"].is_string()) {
      return field_error("response_format", "expected {\"type\": \"text\" | \"json_object\" | \"json_schema\"}");
    }
    const std::string type = (*it)["type"].get<std::string>();
    for (const auto& [key, value] : it->items()) {
      const bool known = key == "type" || (type == "json_schema" && key == "json_schema") ||
                         (type == "json_object" && key == "schema");
      if (!known) {
        return field_error("response_format", str_cat("unrecognized key '", key, "' for type '", type, "'"));
      }
    }
    if (type == "json_object") {
      GrammarSpec spec;
      spec.kind = GrammarSpec::Kind::kJsonObject;
      if (auto schema = it->find("schema"); schema != it->end() && !schema->is_null()) {
        spec.kind = GrammarSpec::Kind::kJsonSchema;  // llama-server's extension
        spec.text = schema_text(*schema);
      }
      STATICLM_RETURN_IF_ERROR(take("response_format", std::move(spec)));
    } else if (type == "json_schema") {
      auto inner = it->find("json_schema");
      if (inner == it->end() || !inner->is_object()) {
        return field_error("response_format",
                           "type json_schema needs \"json_schema\": {\"name\", \"schema\", \"strict\"}");
      }
      for (const auto& [key, value] : inner->items()) {
        if (key != "name" && key != "schema" && key != "strict" && key != "description") {
          return field_error("response_format", str_cat("unrecognized key 'json_schema.", key, "'"));
        }
      }
      if (inner->contains("name") && !(*inner)["name"].is_string()) {
        return field_error("response_format", "json_schema.name: expected a string");
      }
      if (inner->contains("strict") && !(*inner)["strict"].is_boolean() && !(*inner)["strict"].is_null()) {
        return field_error("response_format", "json_schema.strict: expected a boolean");
      }
      auto schema = inner->find("schema");
      if (schema == inner->end() || !(schema->is_object() || schema->is_boolean())) {
        return field_error("response_format", "json_schema.schema: expected a JSON Schema object");
      }
      STATICLM_RETURN_IF_ERROR(
          take("response_format", GrammarSpec{GrammarSpec::Kind::kJsonSchema, schema_text(*schema)}));
    } else if (type != "text") {
      return field_error("response_format", str_cat("type '", type, "' is not one of text, json_object, json_schema"));
    }
  }
  if (auto it = body.find("grammar"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) {
      return type_error("grammar", "a string (GBNF)", *it);
    }
    STATICLM_RETURN_IF_ERROR(check_text("grammar", it->get<std::string>()));
    STATICLM_RETURN_IF_ERROR(take("grammar", GrammarSpec{GrammarSpec::Kind::kGbnf, it->get<std::string>()}));
  }
  if (auto it = body.find("json_schema"); it != body.end() && !it->is_null()) {
    if (!it->is_object() && !it->is_boolean()) {
      return type_error("json_schema", "a JSON Schema object", *it);
    }
    STATICLM_RETURN_IF_ERROR(take("json_schema", GrammarSpec{GrammarSpec::Kind::kJsonSchema, schema_text(*it)}));
  }
  return ok_status();
}

Status parse_prompt(const Json& body, CompletionRequest& request) {
  auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) {
    return field_error("prompt", "required");
  }
  // A list of one string is the same prompt; several prompts would need n > 1 choices.
  const Json* prompt = &*it;
  if (prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string()) {
    prompt = &(*prompt)[0];
  }
  if (prompt->is_string()) {
    request.prompt = prompt->get<std::string>();
    STATICLM_RETURN_IF_ERROR(check_text("prompt", request.prompt));
    if (request.prompt.empty()) {
      return field_error("prompt", "empty");
    }
    return ok_status();
  }
  if (prompt->is_array() && !prompt->empty() && (*prompt)[0].is_number()) {
    std::vector<int32_t> tokens;
    for (const Json& token : *prompt) {
      if (!token.is_number_integer() || token.get<int64_t>() < 0 ||
          token.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
        return field_error("prompt", "token ids must be non-negative integers");
      }
      tokens.push_back(static_cast<int32_t>(token.get<int64_t>()));
    }
    request.prompt_tokens = std::move(tokens);
    return ok_status();
  }
  if (prompt->is_array() && prompt->size() > 1) {
    return field_error("prompt", "one prompt per request (a list of several needs n > 1 choices)");
  }
  return type_error("prompt", "a string or an array of token ids", *prompt);
}

// `tools`, `tool_choice` and `parallel_tool_calls`; that the template reads tools is checked in
// refuse_unsupported.
Status parse_tools(const Json& body, CompletionRequest& request) {
  const bool has_tools = body.contains("tools") && !body["tools"].is_null();
  if (has_tools) {
    request.tools = body["tools"];
    STATICLM_ASSIGN_OR_RETURN(request.tool_functions, parse_tool_functions(request.tools));
  }
  request.tool_choice = has_tools ? ToolChoice::kAuto : ToolChoice::kNone;
  if (auto it = body.find("tool_choice"); it != body.end() && !it->is_null()) {
    if (*it == "none") {
      request.tool_choice = ToolChoice::kNone;
    } else if (*it == "auto" || *it == "required") {
      request.tool_choice = *it == "auto" ? ToolChoice::kAuto : ToolChoice::kRequired;
    } else if (it->is_object() && it->value("type", Json()) == "function" && it->contains("function") &&
               (*it)["function"].is_object() && (*it)["function"].contains("name") &&
               (*it)["function"]["name"].is_string()) {
      request.tool_choice = ToolChoice::kFunction;
      request.tool_choice_name = (*it)["function"]["name"].get<std::string>();
      const bool offered = std::any_of(request.tool_functions.begin(), request.tool_functions.end(),
                                       [&](const ToolFunction& f) { return f.name == request.tool_choice_name; });
      if (has_tools && !offered) {
        return field_error("tool_choice", str_cat("function '", request.tool_choice_name, "' is not among `tools`"));
      }
    } else {
      return field_error("tool_choice", str_cat("expected \"none\", \"auto\", \"required\" or {\"type\": "
                                                "\"function\", \"function\": {\"name\"}}, found ",
                                                it->dump().substr(0, 60)));
    }
    if (!has_tools && request.tool_choice != ToolChoice::kNone) {
      return field_error("tool_choice", "needs `tools`");
    }
  }
  STATICLM_ASSIGN_OR_RETURN(request.parallel_tool_calls, boolean(body, "parallel_tool_calls", false));
  return ok_status();
}

}  // namespace

Result<Json> parse_request_json(std::string_view body, int max_depth) {
  if (json_nesting_depth(body) > max_depth) {
    return invalid_argument("the request body nests deeper than ", max_depth, " levels");
  }
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return invalid_argument("the request body is empty: expected a JSON object");
  }
  Json json = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return invalid_argument("the request body is not valid JSON (UTF-8 text)");
  }
  if (!json.is_object()) {
    return invalid_argument("the request body must be a JSON object, found ", json.type_name());
  }
  return json;
}

Result<CompletionRequest> parse_completion_request(std::string_view body, Endpoint endpoint,
                                                   const RequestLimits& limits) {
  STATICLM_ASSIGN_OR_RETURN(Json json, parse_request_json(body, limits.max_json_depth));
  for (const auto& [name, value] : json.items()) {
    const bool known =
        one_of(name, kCommonFields) || (endpoint == Endpoint::kChatCompletions ? one_of(name, kChatFields)
                                        : endpoint == Endpoint::kCompletions   ? one_of(name, kCompletionFields)
                                                                               : one_of(name, kNativeFields));
    if (!known) {
      return field_error(name, "unrecognized request argument");
    }
    if (endpoint == Endpoint::kNativeCompletion &&
        (name == "logprobs" || name == "top_logprobs" || name == "n" || name == "stream_options")) {
      return field_error(name,
                         "an OpenAI field: /completion takes n_probs for probabilities, gives one completion, "
                         "and ends a stream with its timings (see /v1/completions)");
    }
  }
  if (auto it = json.find("model"); it != json.end() && !it->is_null() && !it->is_string()) {
    return type_error("model", "a string", *it);
  }
  STATICLM_RETURN_IF_ERROR(refuse_unsupported(json, endpoint, limits));

  CompletionRequest request;
  request.endpoint = endpoint;
  STATICLM_ASSIGN_OR_RETURN(request.top_logprobs, read_logprobs(json, endpoint));
  STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> n, integer(json, "n", 1, kMaxChoices));
  request.n = n.value_or(1);
  if (endpoint == Endpoint::kChatCompletions) {
    STATICLM_ASSIGN_OR_RETURN(request.messages, parse_messages(json, limits));
    STATICLM_RETURN_IF_ERROR(parse_tools(json, request));
    if (auto it = json.find("chat_template_kwargs"); it != json.end() && !it->is_null()) {
      if (!it->is_object()) {
        return type_error("chat_template_kwargs", "an object", *it);
      }
      request.template_kwargs = *it;
    }
  } else {
    STATICLM_RETURN_IF_ERROR(parse_prompt(json, request));
    STATICLM_ASSIGN_OR_RETURN(request.echo, boolean(json, "echo", false));
    STATICLM_ASSIGN_OR_RETURN(request.return_tokens, boolean(json, "return_tokens", false));
    STATICLM_ASSIGN_OR_RETURN(request.ignore_eos, boolean(json, "ignore_eos", false));
    STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> slot,
                              integer(json, "id_slot", -1, std::numeric_limits<int32_t>::max()));
    if (slot && *slot != -1) {
      return field_error("id_slot", "sessions are chosen by the server (by the longest cached prefix): give -1");
    }
  }

  constexpr int64_t kMaxInt = std::numeric_limits<int32_t>::max();
  // Completions may ask for no new token: with echo and logprobs, that scores the prompt alone.
  STATICLM_ASSIGN_OR_RETURN(request.max_tokens,
                            integer(json, "max_tokens", endpoint == Endpoint::kCompletions ? 0 : 1, kMaxInt));
  // llama-server's n_predict: -1 is "until the end", as an absent max_tokens.
  STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> n_predict, integer(json, "n_predict", -1, kMaxInt));
  if (n_predict && *n_predict == 0) {
    return field_error("n_predict", "expected -1 (no limit) or a count >= 1, found 0");
  }
  if (n_predict && *n_predict > 0) {
    if (request.max_tokens && *request.max_tokens != *n_predict) {
      return field_error("n_predict", "differs from max_tokens; give one of them");
    }
    request.max_tokens = n_predict;
  }
  // The prompt's cache is always kept and reused; asking for it or not changes no output.
  STATICLM_RETURN_IF_ERROR(boolean(json, "cache_prompt", true).status());
  if (endpoint == Endpoint::kChatCompletions) {
    STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> max_completion,
                              integer(json, "max_completion_tokens", 1, kMaxInt));
    if (max_completion && request.max_tokens && *max_completion != *request.max_tokens) {
      return field_error("max_completion_tokens", "differs from max_tokens; give one of them");
    }
    if (max_completion) {
      request.max_tokens = max_completion;
    }
  }
  SamplingOverrides& s = request.sampling;
  STATICLM_ASSIGN_OR_RETURN(s.temperature, number_in(json, "temperature", 0.0, 2.0));
  STATICLM_ASSIGN_OR_RETURN(s.top_p, number_in(json, "top_p", 0.0, 1.0));
  if (s.top_p == 0.0) {
    return field_error("top_p", "expected a number in (0, 1], found 0");
  }
  STATICLM_ASSIGN_OR_RETURN(s.min_p, number_in(json, "min_p", 0.0, 0.999999));
  STATICLM_ASSIGN_OR_RETURN(s.top_k, integer(json, "top_k", 0, kMaxInt));
  STATICLM_ASSIGN_OR_RETURN(s.frequency_penalty, number_in(json, "frequency_penalty", -2.0, 2.0));
  STATICLM_ASSIGN_OR_RETURN(s.presence_penalty, number_in(json, "presence_penalty", -2.0, 2.0));
  STATICLM_ASSIGN_OR_RETURN(s.repetition_penalty, number_in(json, "repeat_penalty", 0.01, 10.0));
  STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> seed, integer(json, "seed", std::numeric_limits<int64_t>::min(),
                                                                 std::numeric_limits<int64_t>::max()));
  if (seed) {
    s.seed = static_cast<uint64_t>(*seed);
  }
  STATICLM_ASSIGN_OR_RETURN(s.logit_bias, parse_logit_bias(json, limits));
  // llama-server's repeat_last_n: the penalties' window, -1 the whole history (0 turns the
  // penalties off there, which repeat_penalty 1 says here).
  STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> repeat_last_n, integer(json, "repeat_last_n", -1, kMaxInt));
  if (repeat_last_n && *repeat_last_n == 0) {
    return field_error("repeat_last_n", "0 (penalties off) is not supported: give repeat_penalty 1 instead");
  }
  if (repeat_last_n) {
    s.repetition_window = *repeat_last_n < 0 ? 0 : *repeat_last_n;
  }
  STATICLM_RETURN_IF_ERROR(parse_stop(json, limits, request.stop));
  STATICLM_RETURN_IF_ERROR(parse_constraint(json, endpoint, request));
  const bool forced = request.tool_choice == ToolChoice::kRequired || request.tool_choice == ToolChoice::kFunction;
  if (forced && request.grammar) {
    return field_error("tool_choice", str_cat("a forced tool call is constrained by the tools' parameters: give it or ",
                                              request.grammar_field, ", not both"));
  }
  STATICLM_ASSIGN_OR_RETURN(request.stream, boolean(json, "stream", false));
  if (auto it = json.find("stream_options"); it != json.end() && !it->is_null()) {
    if (!request.stream) {
      return field_error("stream_options", "only allowed when stream is true");
    }
    if (!it->is_object()) {
      return type_error("stream_options", "an object", *it);
    }
    for (const auto& [name, value] : it->items()) {
      if (name != "include_usage") {
        return field_error("stream_options." + name, "unrecognized stream option");
      }
    }
    STATICLM_ASSIGN_OR_RETURN(request.include_usage, boolean(*it, "include_usage", false));
  }
  return request;
}

std::string request_error_param(const Status& status) {
  const std::string& message = status.message();
  if (message.size() < 2 || message[0] != '\'') {
    return "";
  }
  const size_t end = message.find("': ", 1);
  return end == std::string::npos ? "" : message.substr(1, end - 1);
}

}  // namespace staticlm::server
