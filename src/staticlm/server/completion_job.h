// SPDX-License-Identifier: Apache-2.0
// One completion request from checked body to last byte: prepare() turns the request into prompt
// tokens and generation options (rendering the chat template, checking that prompt plus max_tokens
// fit the context) and takes a place in the queue; run() waits for a session, generates, and
// writes the response (one JSON object, or SSE chunks ending in `data: [DONE]`). A client that goes
// away cancels it: a failed write stops the generation. So does the server stopping, within a token
// or a wait's poll, and the response then ends with an error saying so.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/chat/program_chat_template.h"
#include "staticlm/llm/engine.h"
#include "staticlm/server/completion_request.h"
#include "staticlm/server/metrics.h"
#include "staticlm/server/openai_json.h"
#include "staticlm/server/session_pool.h"

namespace staticlm::server {

struct ModelContext {
  const Engine* engine = nullptr;
  const Tokenizer* tokenizer = nullptr;
  const ProgramChatTemplate* chat = nullptr;
  SessionPool* pool = nullptr;
  Metrics* metrics = nullptr;
  std::string model_name;
  double client_check_seconds = 0.25;
  // The server is stopping: a request still waiting or generating ends, telling its client so.
  const std::atomic<bool>* shutting_down = nullptr;
  SpeculationOptions speculation;  // the leased slot's draft session filled in per request
};

// Writes bytes to the client; false once it is gone.
using ResponseWriter = std::function<bool(std::string_view bytes)>;

class CompletionJob {
 public:
  // Fails with InvalidArgument naming the field for a prompt the template refuses, token ids outside
  // the vocabulary, or a prompt plus max_tokens beyond the context (saying how many tokens fit);
  // ResourceExhausted when the queue is full.
  static Result<std::shared_ptr<CompletionJob>> prepare(const ModelContext& model, CompletionRequest request,
                                                        CompletionHeader header);

  bool streaming() const { return request_.stream; }
  void run(const ResponseWriter& write);

 private:
  CompletionJob(const ModelContext& model, CompletionRequest request, CompletionHeader header, QueueTicket ticket)
      : model_(model), request_(std::move(request)), header_(std::move(header)), ticket_(std::move(ticket)) {}

  std::string event(const Json& json) const;
  // The ids of choice `choice`'s tool calls, before each call's index.
  std::string call_id_prefix(int64_t choice) const;

  ModelContext model_;
  CompletionRequest request_;
  CompletionHeader header_;
  QueueTicket ticket_;
  std::vector<int32_t> prompt_;
  GenerationOptions options_;
  TokenText token_text_;   // with logprobs
  std::string echo_text_;  // with echo: the prompt's text, which the reply starts with
  // With tools: whether replies are parsed for calls, in which syntax, and whether a call is forced.
  bool parse_tool_calls_ = false;
  bool tool_call_forced_ = false;
  ToolCallSyntax tool_syntax_ = ToolCallSyntax::kPlainJson;
};

}  // namespace staticlm::server
