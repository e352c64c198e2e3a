// SPDX-License-Identifier: Apache-2.0
// The request parser: what it honours, what it refuses (by field, with OpenAI's 400 semantics),
// and that hostile bodies get an error instead of a crash or a silent default.
#include "staticlm/server/completion_request.h"

#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace staticlm::server {
namespace {

Result<CompletionRequest> chat(std::string_view body, bool template_uses_tools = false) {
  RequestLimits limits;
  limits.template_uses_tools = template_uses_tools;
  return parse_completion_request(body, Endpoint::kChatCompletions, limits);
}

Result<CompletionRequest> completion(std::string_view body) {
  return parse_completion_request(body, Endpoint::kCompletions, RequestLimits{});
}

void expect_refused(const Result<CompletionRequest>& result, std::string_view param, std::string_view fragment) {
  ASSERT_FALSE(result.ok()) << "expected a refusal of '" << param << "'";
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(request_error_param(result.status()), param) << result.status().message();
  EXPECT_NE(result.status().message().find(fragment), std::string::npos) << result.status().message();
}

constexpr std::string_view kHello = R"("messages": [{"role": "user", "content": "hello"}])";

std::string with_hello(std::string_view more) {
  return str_cat("{", kHello, more.empty() ? "" : ", ", more, "}");
}

TEST(CompletionRequestTest, ReadsEverySupportedField) {
  auto request = chat(R"({
    "model": "anything", "messages": [{"role": "system", "content": "be brief"},
                                      {"role": "user", "content": [{"type": "text", "text": "hel"},
                                                                   {"type": "text", "text": "lo"}]}],
    "max_completion_tokens": 7, "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "seed": -3,
    "stop": ["\n\n", "END"], "frequency_penalty": 0.5, "presence_penalty": -0.25, "repeat_penalty": 1.1,
    "stream": true, "stream_options": {"include_usage": true}, "n": 1, "logprobs": false, "user": "u1",
    "response_format": {"type": "text"}, "chat_template_kwargs": {"enable_thinking": false}})");
  ASSERT_TRUE(request.ok()) << request.status().to_string();
  EXPECT_EQ(request->messages.size(), 2u);
  EXPECT_EQ(request->messages[1]["content"], "hello") << "text parts are joined";
  EXPECT_EQ(request->max_tokens, 7);
  EXPECT_EQ(request->sampling.temperature, 0.5);
  EXPECT_EQ(request->sampling.top_p, 0.9);
  EXPECT_EQ(request->sampling.top_k, 40);
  EXPECT_EQ(request->sampling.min_p, 0.05);
  EXPECT_EQ(request->sampling.frequency_penalty, 0.5);
  EXPECT_EQ(request->sampling.presence_penalty, -0.25);
  EXPECT_EQ(request->sampling.repetition_penalty, 1.1);
  EXPECT_EQ(request->sampling.seed, static_cast<uint64_t>(int64_t{-3}));
  EXPECT_EQ(request->stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_TRUE(request->stream);
  EXPECT_TRUE(request->include_usage);
  EXPECT_EQ(request->template_kwargs["enable_thinking"], false);
}

TEST(CompletionRequestTest, AbsentFieldsAreLeftToTheProgram) {
  auto request = chat(with_hello(""));
  ASSERT_TRUE(request.ok());
  EXPECT_FALSE(request->max_tokens.has_value()) << "absent: until the context is full";
  EXPECT_TRUE(request->sampling.empty()) << "absent: the program's generation_config, a random seed";
  EXPECT_FALSE(request->stream);
  EXPECT_TRUE(request->tools.is_null());
}

TEST(CompletionRequestTest, CompletionPromptsAreTextOrTokenIds) {
  auto text = completion(R"({"prompt": ["In the beginning"], "max_tokens": 3, "echo": false, "best_of": 1})");
  ASSERT_TRUE(text.ok()) << text.status().to_string();
  EXPECT_EQ(text->prompt, "In the beginning");
  EXPECT_FALSE(text->prompt_tokens.has_value());
  auto ids = completion(R"({"prompt": [1, 2, 3]})");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids->prompt_tokens, (std::vector<int32_t>{1, 2, 3}));
  expect_refused(completion(R"({"prompt": ["a", "b"]})"), "prompt", "one prompt per request");
  expect_refused(completion(R"({"prompt": [1, -2]})"), "prompt", "non-negative");
  expect_refused(completion(R"({"prompt": [1, 3000000000]})"), "prompt", "non-negative");
  expect_refused(completion(R"({"prompt": ""})"), "prompt", "empty");
  expect_refused(completion(R"({"max_tokens": 3})"), "prompt", "required");
  expect_refused(completion(R"({"prompt": "x", "echo": true, "logprobs": 1, "stream": true})"), "echo", "not streamed");
  expect_refused(completion(R"({"prompt": "x", "echo": "yes"})"), "echo", "a boolean");
  expect_refused(chat(with_hello(R"("max_tokens": 0)")), "max_tokens", "[1, ");
  auto scoring = completion(R"({"prompt": [1, 2, 3], "echo": true, "logprobs": 0, "max_tokens": 0})");
  ASSERT_TRUE(scoring.ok()) << scoring.status().to_string();
  EXPECT_TRUE(scoring->echo);
  EXPECT_EQ(scoring->top_logprobs, 0);
  EXPECT_EQ(scoring->max_tokens, 0);
  expect_refused(completion(R"({"prompt": "x", "suffix": "y"})"), "suffix", "not supported");
  expect_refused(completion(R"({"prompt": "x", "best_of": 3})"), "best_of", "best_of = 1");
  expect_refused(completion(R"({"prompt": "x", "messages": []})"), "messages", "unrecognized");
}

TEST(CompletionRequestTest, UnsupportedFeaturesAreRefusedByName) {
  expect_refused(chat(with_hello(R"("n": 17)")), "n", "[1, 16]");
  expect_refused(chat(with_hello(R"("n": 0)")), "n", "[1, 16]");
  auto three = chat(with_hello(R"("n": 3)"));
  ASSERT_TRUE(three.ok()) << three.status().to_string();
  EXPECT_EQ(three->n, 3);
  expect_refused(chat(with_hello(R"("top_logprobs": 2)")), "top_logprobs", "needs \"logprobs\": true");
  expect_refused(chat(with_hello(R"("logprobs": true, "top_logprobs": 21)")), "top_logprobs", "[0, 20]");
  expect_refused(completion(R"({"prompt": "x", "logprobs": true})"), "logprobs", "an integer");
  expect_refused(chat(with_hello(R"("response_format": {"type": "xml"})")), "response_format",
                 "not one of text, json_object, json_schema");
  expect_refused(chat(with_hello(R"("response_format": {"type": "json_schema"})")), "response_format",
                 "needs \"json_schema\"");
  expect_refused(chat(with_hello(R"("response_format": {"type": "json_schema", "json_schema": {"name": "x"}})")),
                 "response_format", "json_schema.schema");
  expect_refused(chat(with_hello(R"("response_format": {"type": "json_object", "format": 1})")), "response_format",
                 "unrecognized key 'format'");
  expect_refused(chat(with_hello(R"("response_format": {"type": "json_object"}, "grammar": "root ::= \"a\"")")),
                 "grammar", "give one of response_format, grammar and json_schema");
  expect_refused(chat(with_hello(R"("grammar": 3)")), "grammar", "expected a string");
  expect_refused(completion(R"({"prompt": "x", "json_schema": [1]})"), "json_schema", "a JSON Schema object");
  expect_refused(completion(R"({"prompt": "x", "response_format": {"type": "json_object"}})"), "response_format",
                 "unrecognized");
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "f"}}])";
  expect_refused(chat(with_hello(tools)), "tools", "does not support tools");
  auto with_tools = chat(with_hello(tools), /*template_uses_tools=*/true);
  ASSERT_TRUE(with_tools.ok()) << with_tools.status().to_string();
  EXPECT_EQ(with_tools->tools.size(), 1u);
  EXPECT_EQ(with_tools->tool_choice, ToolChoice::kAuto);
  EXPECT_FALSE(with_tools->parallel_tool_calls);
  expect_refused(chat(with_hello(R"("tool_choice": "required")"), true), "tool_choice", "needs `tools`");
  expect_refused(chat(with_hello(tools + R"(, "tool_choice": "always")"), true), "tool_choice",
                 "expected \"none\", \"auto\", \"required\"");
  expect_refused(chat(with_hello(tools + R"(, "tool_choice": {"type": "function", "function": {"name": "g"}})"), true),
                 "tool_choice", "function 'g' is not among `tools`");
  expect_refused(
      chat(with_hello(tools + R"(, "tool_choice": "required", "response_format": {"type": "json_object"})"), true),
      "tool_choice", "give it or response_format, not both");
  expect_refused(chat(with_hello(R"("tools": [{"type": "function", "function": {"name": "f"}}, {"type": "x"}])"), true),
                 "tools[1]", "only function tools");
  auto named = chat(with_hello(tools + R"(, "tool_choice": {"type": "function", "function": {"name": "f"}},
                                          "parallel_tool_calls": true)"),
                    true);
  ASSERT_TRUE(named.ok()) << named.status().to_string();
  EXPECT_EQ(named->tool_choice, ToolChoice::kFunction);
  EXPECT_EQ(named->tool_choice_name, "f");
  EXPECT_TRUE(named->parallel_tool_calls);
  ASSERT_EQ(named->tool_functions.size(), 1u);
  auto none = chat(with_hello(tools + R"(, "tool_choice": "none")"), true);
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  EXPECT_EQ(none->tool_choice, ToolChoice::kNone);
  expect_refused(chat(with_hello(R"("functions": [])")), "functions", "unrecognized request argument");
  expect_refused(chat(with_hello(R"("prompt": "x")")), "prompt", "unrecognized");
  expect_refused(chat(with_hello(R"("stream_options": {"include_usage": true})")), "stream_options", "stream is true");
  expect_refused(chat(with_hello(R"("stream": true, "stream_options": {"chunk": 1})")), "stream_options.chunk",
                 "unrecognized");
}

TEST(CompletionRequestTest, LogitBiasIsOpenAIsObjectOrLlamaServersPairs) {
  RequestLimits limits;
  limits.vocab_size = 100;
  auto object = parse_completion_request(with_hello(R"("logit_bias": {"5": 10, "7": -100, "9": 0.5})"),
                                         Endpoint::kChatCompletions, limits);
  ASSERT_TRUE(object.ok()) << object.status().to_string();
  using Biases = std::vector<std::pair<int32_t, float>>;
  EXPECT_EQ(*object->sampling.logit_bias, (Biases{{5, 10.0f}, {7, -100.0f}, {9, 0.5f}}));
  auto pairs = parse_completion_request(R"({"prompt": "x", "logit_bias": [[3, false], [4, 2]]})",
                                        Endpoint::kCompletions, limits);
  ASSERT_TRUE(pairs.ok()) << pairs.status().to_string();
  EXPECT_EQ(*pairs->sampling.logit_bias, (Biases{{3, -100.0f}, {4, 2.0f}})) << "false bans, as -100 does";
  auto outside =
      parse_completion_request(with_hello(R"("logit_bias": {"100": 1})"), Endpoint::kChatCompletions, limits);
  expect_refused(outside, "logit_bias.100", "outside the vocabulary [0, 100)");
  expect_refused(chat(with_hello(R"("logit_bias": {"abc": 1})")), "logit_bias.abc", "a token id");
  expect_refused(chat(with_hello(R"("logit_bias": {"-1": 1})")), "logit_bias.-1", "expected a token id in");
  expect_refused(chat(with_hello(R"("logit_bias": {"5": 101})")), "logit_bias.5", "[-100, 100]");
  expect_refused(chat(with_hello(R"("logit_bias": {"5": "up"})")), "logit_bias.5", "[-100, 100]");
  expect_refused(chat(with_hello(R"("logit_bias": [[1, 1], [1, 2]])")), "logit_bias.1", "given twice");
  expect_refused(chat(with_hello(R"("logit_bias": [[1]])")), "logit_bias[0]", "[token id, bias] pair");
  expect_refused(chat(with_hello(R"("logit_bias": 5)")), "logit_bias", "an object");
  EXPECT_TRUE(chat(with_hello(R"("logit_bias": {})")).ok());
}

TEST(CompletionRequestTest, FieldsThatChangeNothingAreAccepted) {
  auto request = chat(with_hello(R"("store": true, "metadata": {"app": "x"}, "service_tier": "auto",
                                    "user": "u", "parallel_tool_calls": true)"));
  ASSERT_TRUE(request.ok()) << request.status().to_string();
  EXPECT_TRUE(request->sampling.empty());
}

TEST(CompletionRequestTest, LlamaServerSamplingFieldsMapOrAreRefused) {
  auto request = completion(R"({"prompt": "x", "n_predict": 12, "cache_prompt": false, "repeat_last_n": 32,
                                "typical_p": 1.0, "mirostat": 0, "n_probs": 0})");
  ASSERT_TRUE(request.ok()) << request.status().to_string();
  EXPECT_EQ(request->max_tokens, 12);
  EXPECT_EQ(request->sampling.repetition_window, 32);
  auto whole = completion(R"({"prompt": "x", "repeat_last_n": -1, "n_predict": -1})");
  ASSERT_TRUE(whole.ok()) << whole.status().to_string();
  EXPECT_EQ(whole->sampling.repetition_window, 0) << "-1: the whole history";
  EXPECT_FALSE(whole->max_tokens.has_value()) << "-1: no limit";
  expect_refused(completion(R"({"prompt": "x", "repeat_last_n": 0})"), "repeat_last_n", "repeat_penalty 1");
  expect_refused(completion(R"({"prompt": "x", "n_predict": 3, "max_tokens": 4})"), "n_predict", "differs");
  expect_refused(completion(R"({"prompt": "x", "typical_p": 0.9})"), "typical_p", "not supported");
  expect_refused(completion(R"({"prompt": "x", "mirostat": 2})"), "mirostat", "not supported");
  expect_refused(completion(R"({"prompt": "x", "n_probs": 5})"), "n_probs", "is /completion's: here ask for logprobs");
  expect_refused(completion(R"({"prompt": "x", "cache_prompt": "yes"})"), "cache_prompt", "expected a boolean");
}

Result<CompletionRequest> native(std::string_view body) {
  return parse_completion_request(body, Endpoint::kNativeCompletion, RequestLimits{});
}

TEST(CompletionRequestTest, LlamaServersCompletionTakesItsOwnFields) {
  auto request = native(R"({"prompt": "x", "n_predict": 5, "n_probs": 3, "return_tokens": true, "ignore_eos": true,
                            "id_slot": -1, "grammar": "root ::= \"a\"", "cache_prompt": true})");
  ASSERT_TRUE(request.ok()) << request.status().to_string();
  EXPECT_EQ(request->top_logprobs, 3);
  EXPECT_TRUE(request->return_tokens);
  EXPECT_TRUE(request->ignore_eos);
  EXPECT_EQ(request->max_tokens, 5);
  auto plain = native(R"({"prompt": [1, 2, 3], "n_probs": 0})");
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_EQ(plain->top_logprobs, -1);
  EXPECT_FALSE(plain->return_tokens);
  for (const char* openai_field : {"logprobs", "top_logprobs", "n", "stream_options"}) {
    expect_refused(native(str_cat(R"({"prompt": "x", ")", openai_field, R"(": 1})")), openai_field,
                   "an OpenAI field: /completion takes n_probs");
  }
  expect_refused(native(R"({"prompt": "x", "echo": true})"), "echo", "unrecognized request argument");
  expect_refused(native(R"({"prompt": "x", "id_slot": 2})"), "id_slot", "give -1");
  expect_refused(native(R"({"prompt": "x", "n_probs": 21})"), "n_probs", "[0, 20]");
  expect_refused(native(R"({"prompt": "x", "ignore_eos": 1})"), "ignore_eos", "expected a boolean");
  // The OpenAI endpoints do not take /completion's own fields.
  expect_refused(completion(R"({"prompt": "x", "return_tokens": true})"), "return_tokens", "unrecognized");
}

TEST(CompletionRequestTest, WrongTypesAndRangesNameTheField) {
  expect_refused(chat(with_hello(R"("temperature": "hot")")), "temperature", "expected a number, found string");
  expect_refused(chat(with_hello(R"("temperature": 2.5)")), "temperature", "[0, 2]");
  expect_refused(chat(with_hello(R"("top_p": 0)")), "top_p", "(0, 1]");
  expect_refused(chat(with_hello(R"("top_k": -1)")), "top_k", "expected an integer in [0,");
  expect_refused(chat(with_hello(R"("min_p": 1)")), "min_p", "expected a number in");
  expect_refused(chat(with_hello(R"("max_tokens": 0)")), "max_tokens", "[1,");
  expect_refused(chat(with_hello(R"("max_tokens": 2.5)")), "max_tokens", "expected an integer");
  expect_refused(chat(with_hello(R"("max_tokens": 18446744073709551615)")), "max_tokens", "expected an integer in");
  expect_refused(chat(with_hello(R"("max_tokens": 4, "max_completion_tokens": 5)")), "max_completion_tokens",
                 "differs");
  expect_refused(chat(with_hello(R"("seed": 18446744073709551615)")), "seed", "expected an integer in");
  expect_refused(chat(with_hello(R"("frequency_penalty": 3)")), "frequency_penalty", "[-2, 2]");
  expect_refused(chat(with_hello(R"("stop": 5)")), "stop", "a string or an array");
  expect_refused(chat(with_hello(R"("stop": [""])")), "stop", "empty");
  expect_refused(chat(with_hello(R"("stream": "yes")")), "stream", "expected a boolean");
  expect_refused(chat(with_hello(R"("model": 5)")), "model", "expected a string");
  expect_refused(chat(with_hello(R"("chat_template_kwargs": [])")), "chat_template_kwargs", "an object");
}

TEST(CompletionRequestTest, MessagesAreChecked) {
  expect_refused(chat(R"({"messages": []})"), "messages", "non-empty");
  expect_refused(chat(R"({"messages": "hello"})"), "messages", "non-empty array");
  expect_refused(chat(R"({})"), "messages", "required");
  expect_refused(chat(R"({"messages": [5]})"), "messages[0]", "expected an object");
  expect_refused(chat(R"({"messages": [{"content": "x"}]})"), "messages[0].role", "expected one of");
  expect_refused(chat(R"({"messages": [{"role": "root", "content": "x"}]})"), "messages[0].role", "found 'root'");
  expect_refused(chat(R"({"messages": [{"role": "user"}]})"), "messages[0].content", "required");
  expect_refused(chat(R"({"messages": [{"role": "user", "content": 7}]})"), "messages[0].content",
                 "a string or an array of content parts");
  expect_refused(chat(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})"), "messages[0].content",
                 "'image_url' is not supported");
  // JSON is UTF-8: the parser refuses other bytes before any field is read.
  auto not_utf8 = chat("{\"messages\": [{\"role\": \"user\", \"content\": \"\xff\"}]}");
  ASSERT_FALSE(not_utf8.ok());
  EXPECT_NE(not_utf8.status().message().find("not valid JSON"), std::string::npos);
  // An assistant turn that only calls tools has no content.
  auto tool_call = chat(R"({"messages": [{"role": "user", "content": "x"},
                                         {"role": "assistant", "tool_calls": [{"id": "1"}]},
                                         {"role": "tool", "content": "42", "tool_call_id": "1"}]})");
  ASSERT_TRUE(tool_call.ok()) << tool_call.status().to_string();
  EXPECT_TRUE(tool_call->messages[1]["content"].is_null());
  EXPECT_EQ(tool_call->messages[2]["tool_call_id"], "1") << "other fields reach the template";
}

TEST(CompletionRequestTest, HostileBodiesGetErrorsNotCrashes) {
  for (std::string_view body : {"", "{", "[]", "null", "\"x\"", "{\"messages\": }", "\xff\xfe{}"}) {
    auto result = chat(body);
    ASSERT_FALSE(result.ok()) << body;
    EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  }
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto deep_result = chat(str_cat(R"({"messages": )", deep, "}"));
  ASSERT_FALSE(deep_result.ok());
  EXPECT_NE(deep_result.status().message().find("nests deeper than 64"), std::string::npos);
  // Brackets inside strings do not count as nesting.
  auto in_string = chat(with_hello(str_cat(R"("user": ")", std::string(200, '['), "\"")));
  EXPECT_TRUE(in_string.ok()) << in_string.status().to_string();
  std::string many_stops =
      with_hello(R"("stop": ["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"])");
  expect_refused(chat(many_stops), "stop", "at most 16");
}

TEST(CompletionRequestTest, ErrorParamIsTheQuotedFieldAtTheStart) {
  EXPECT_EQ(request_error_param(invalid_argument("'top_p': bad")), "top_p");
  EXPECT_EQ(request_error_param(invalid_argument("the body is not JSON")), "");
  EXPECT_EQ(request_error_param(invalid_argument("'unterminated")), "");
}

TEST(CompletionRequestTest, ConstrainedOutputFields) {
  auto json_mode = chat(with_hello(R"("response_format": {"type": "json_object"})"));
  ASSERT_TRUE(json_mode.ok()) << json_mode.status().to_string();
  ASSERT_TRUE(json_mode->grammar);
  EXPECT_EQ(json_mode->grammar->kind, GrammarSpec::Kind::kJsonObject);
  EXPECT_EQ(json_mode->grammar_field, "response_format");
  auto schema = chat(with_hello(
      R"("response_format": {"type": "json_schema", "json_schema": {"name": "n", "strict": true, "schema": {"type": "integer"}}})"));
  ASSERT_TRUE(schema.ok()) << schema.status().to_string();
  ASSERT_TRUE(schema->grammar);
  EXPECT_EQ(schema->grammar->kind, GrammarSpec::Kind::kJsonSchema);
  EXPECT_EQ(schema->grammar->text, R"({"type":"integer"})");
  auto grammar = completion(R"({"prompt": "x", "grammar": "root ::= [0-9]+"})");
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  EXPECT_EQ(grammar->grammar->kind, GrammarSpec::Kind::kGbnf);
  EXPECT_EQ(grammar->grammar_field, "grammar");
  auto llama_schema = completion(R"({"prompt": "x", "json_schema": {"type": "boolean"}})");
  ASSERT_TRUE(llama_schema.ok()) << llama_schema.status().to_string();
  EXPECT_EQ(llama_schema->grammar->text, R"({"type":"boolean"})");
  auto text = chat(with_hello(R"("response_format": {"type": "text"})"));
  ASSERT_TRUE(text.ok());
  EXPECT_FALSE(text->grammar);
}

}  // namespace
}  // namespace staticlm::server
