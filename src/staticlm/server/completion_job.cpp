// SPDX-License-Identifier: Apache-2.0
#include "staticlm/server/completion_job.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>

#include "staticlm/chat/conversation.h"
#include "staticlm/server/native_completion_json.h"

namespace staticlm::server {
namespace {

using Clock = std::chrono::steady_clock;

Result<std::vector<int32_t>> chat_prompt(const ModelContext& model, const CompletionRequest& request) {
  ChatRenderInputs inputs;
  inputs.messages = request.messages;
  inputs.tools = request.tools;
  inputs.extra = request.template_kwargs;
  inputs.add_generation_prompt = true;
  auto rendered = model.chat->chat_template.render(inputs);
  if (!rendered.ok()) {
    // The template refusing a conversation (roles that do not alternate, ...) is the request's fault.
    return invalid_argument("'messages': ", rendered.status().message());
  }
  return encode_chat_prompt(*model.tokenizer, *rendered);
}

Result<std::vector<int32_t>> completion_prompt(const ModelContext& model, const CompletionRequest& request) {
  if (!request.prompt_tokens) {
    EncodeOptions encode;  // a text prompt gets the tokenizer's special tokens (BOS), as llama-server does
    return model.tokenizer->encode(request.prompt, encode);
  }
  const int64_t vocab = std::min<int64_t>(model.tokenizer->vocab_size(), model.pool->vocab_size());
  for (size_t i = 0; i < request.prompt_tokens->size(); ++i) {
    if ((*request.prompt_tokens)[i] >= vocab) {
      return invalid_argument("'prompt': token ", i, " is ", (*request.prompt_tokens)[i],
                              ", outside the vocabulary [0, ", vocab, ")");
    }
  }
  return *request.prompt_tokens;
}

}  // namespace

Result<std::shared_ptr<CompletionJob>> CompletionJob::prepare(const ModelContext& model, CompletionRequest request,
                                                              CompletionHeader header) {
  const bool chat = request.endpoint == Endpoint::kChatCompletions;
  const std::string_view prompt_field = chat ? "messages" : "prompt";
  STATICLM_ASSIGN_OR_RETURN(std::vector<int32_t> prompt,
                            chat ? chat_prompt(model, request) : completion_prompt(model, request));
  if (prompt.empty()) {
    return invalid_argument("'", prompt_field, "': the prompt encodes to no tokens");
  }
  const int64_t context = model.pool->context_length();
  const auto prompt_len = static_cast<int64_t>(prompt.size());
  const int64_t room = max_new_tokens_that_fit(prompt_len, context);
  if (room < 1) {
    return invalid_argument("'", prompt_field, "': the prompt is ", prompt_len, " tokens and the context holds ",
                            context, "; shorten it");
  }
  if (request.max_tokens && *request.max_tokens > room) {
    return invalid_argument("'max_tokens': the prompt is ", prompt_len, " tokens and the context holds ", context,
                            ", so at most ", room, " tokens can be generated; ", *request.max_tokens,
                            " were requested");
  }
  GenerationOptions options =
      chat ? chat_generation_options(*model.engine, *model.chat) : model.engine->default_generation();
  options.reuse_cached_prefix = true;
  if (request.ignore_eos) {
    options.eos_ids.clear();
  }
  STATICLM_ASSIGN_OR_RETURN(options.sampling, model.engine->choose_sampling(request.sampling));
  options.stop_strings.insert(options.stop_strings.end(), request.stop.begin(), request.stop.end());
  // Without max_tokens, as much as the context holds (StopReason::kContextFull when it fills).
  options.max_new_tokens = request.max_tokens.value_or(std::numeric_limits<int64_t>::max());
  options.stop_at_context_end = !request.max_tokens;
  if (request.grammar) {
    auto grammar = model.engine->compile_grammar(*request.grammar);
    if (!grammar.ok()) {
      return invalid_argument("'", request.grammar_field, "': ", grammar.status().message());
    }
    options.grammar = std::move(grammar).value();
  }
  const bool forced = request.tool_choice == ToolChoice::kRequired || request.tool_choice == ToolChoice::kFunction;
  const ToolCallSyntax tool_syntax =
      chat ? tool_call_syntax(model.chat->chat_template.source()) : ToolCallSyntax::kPlainJson;
  // Under "auto" a call is told from text by its syntax's mark, and constrained from there on; a
  // request's own grammar constrains the whole reply instead.
  const bool auto_calls = request.tool_choice == ToolChoice::kAuto && !request.tool_functions.empty() &&
                          tool_call_syntax_is_marked(tool_syntax) && !request.grammar;
  if (forced || auto_calls) {
    std::vector<ToolFunction> functions;
    for (const ToolFunction& function : request.tool_functions) {
      if (request.tool_choice != ToolChoice::kFunction || function.name == request.tool_choice_name) {
        functions.push_back(function);
      }
    }
    const bool parallel = request.parallel_tool_calls && tool_call_syntax_takes_several(tool_syntax);
    STATICLM_ASSIGN_OR_RETURN(const std::string gbnf, tool_call_gbnf(functions, tool_syntax, parallel));
    auto grammar = model.engine->compile_grammar(GrammarSpec{GrammarSpec::Kind::kGbnf, gbnf});
    if (!grammar.ok()) {
      return invalid_argument("'tools': ", grammar.status().message());
    }
    options.grammar = std::move(grammar).value();
    if (auto_calls) {
      options.grammar_trigger = tool_call_syntax_trigger(tool_syntax);
      options.grammar_trigger_at_start = tool_call_trigger_at_start(tool_syntax);
    }
  }
  options.top_logprobs = request.top_logprobs;
  options.prompt_logprobs = request.echo;
  if (request.echo && request.top_logprobs >= 0 && !model.pool->prefill_returns_all_logits()) {
    return invalid_argument(
        "'echo': the prompt's log-probabilities need every position's logits, and this program keeps only the "
        "last (exported with --logits last): export it with --logits all");
  }
  std::string echo_text;
  if (request.echo) {
    if (request.prompt_tokens) {
      STATICLM_ASSIGN_OR_RETURN(echo_text, model.tokenizer->decode(prompt, /*skip_special=*/true));
    } else {
      echo_text = request.prompt;
    }
  }
  TokenText token_text;
  if (request.top_logprobs >= 0) {
    STATICLM_ASSIGN_OR_RETURN(std::shared_ptr<const TokenVocabulary> vocabulary, model.engine->token_vocabulary());
    token_text = [vocabulary, tokenizer = model.tokenizer](int32_t id) {
      if (id < vocabulary->size() && !vocabulary->piece(id).empty()) {
        return std::string(vocabulary->piece(id));
      }
      const int32_t ids[] = {id};
      auto special = tokenizer->decode_bytes(ids, /*skip_special=*/false);
      return special.ok() ? *special : std::string();
    };
  }
  STATICLM_ASSIGN_OR_RETURN(QueueTicket ticket, model.pool->enqueue());
  std::shared_ptr<CompletionJob> job(
      new CompletionJob(model, std::move(request), std::move(header), std::move(ticket)));
  job->prompt_ = std::move(prompt);
  job->options_ = std::move(options);
  job->token_text_ = std::move(token_text);
  job->echo_text_ = std::move(echo_text);
  job->tool_call_forced_ = forced;
  job->parse_tool_calls_ = forced || auto_calls;
  job->tool_syntax_ = tool_syntax;
  return job;
}

std::string CompletionJob::call_id_prefix(int64_t choice) const {
  // header ids are "chatcmpl-<time>-<count>": unique per request.
  return str_cat("call_", header_.id.substr(header_.id.find('-') + 1), "_", choice, "_");
}

std::string CompletionJob::event(const Json& json) const {
  return "data: " + dump_json_text(json) + "\n\n";
}

void CompletionJob::run(const ResponseWriter& write_to_client) {
  const bool chat = request_.endpoint == Endpoint::kChatCompletions;
  const bool native = request_.endpoint == Endpoint::kNativeCompletion;
  // llama-server's /completion stream ends with its last chunk, OpenAI's with a marker.
  const std::string_view done = native ? std::string_view() : std::string_view("data: [DONE]\n\n");
  // Set when the client is gone or the server is stopping; the generation polls it.
  std::atomic<bool> stop{false};
  bool client_gone = false;
  auto write = [&](std::string_view bytes) {
    if (stop.load(std::memory_order_relaxed)) {
      return false;
    }
    if (model_.shutting_down != nullptr && model_.shutting_down->load()) {
      stop.store(true, std::memory_order_relaxed);
      return false;
    }
    if (!write_to_client(bytes)) {
      client_gone = true;
      stop.store(true, std::memory_order_relaxed);
      return false;
    }
    return true;
  };
  auto end_cancelled = [&] {
    model_.metrics->count_cancelled();
    if (!client_gone) {
      const Json error = error_json(
          ApiError{503, "unavailable_error", "the server is stopping: the request was cancelled", "", "shutting_down"});
      write_to_client(streaming() ? event(error) + std::string(done) : dump_json_text(error));
    }
  };
  // Whitespace before a JSON body and SSE comments are ignored by clients; writing one shows
  // whether the client is still connected.
  const std::string_view probe = streaming() ? std::string_view(": waiting\n\n") : std::string_view(" ");
  std::optional<SessionLease> lease = model_.pool->acquire(
      std::move(ticket_), prompt_, [&] { return write(probe); }, model_.client_check_seconds);
  if (!lease) {
    end_cancelled();
    return;
  }
  auto last_check = Clock::now();
  const auto check_every = std::chrono::duration<double>(model_.client_check_seconds);
  int64_t choice = 0;
  // A stream's log-probabilities go with the first chunk after their tokens are sampled.
  std::vector<TokenLogprob> pending;
  int64_t logprob_offset = 0;
  auto take_logprobs = [&]() -> Json {
    if (options_.top_logprobs < 0) {
      return nullptr;
    }
    Json json = chat     ? chat_logprobs_json(pending, token_text_)
                : native ? native_probabilities_json(pending, token_text_)
                         : text_logprobs_json(pending, token_text_, logprob_offset);
    if (!chat) {
      for (const TokenLogprob& entry : pending) {
        logprob_offset += text_characters(token_text_(entry.token));
      }
    }
    pending.clear();
    return json;
  };
  // A native stream's token ids go with the first chunk after they are sampled, as llama-server's.
  std::vector<int32_t> pending_tokens;
  int64_t predicted = 0;
  std::optional<ToolCallHold> hold;
  auto native_chunk = [&](std::string_view text) {
    const NativeChunkCounts counts{pending_tokens, predicted, static_cast<int64_t>(prompt_.size()),
                                   static_cast<int64_t>(lease->slot())};
    Json chunk = native_chunk_json(text, take_logprobs(), counts);
    pending_tokens.clear();
    return chunk;
  };
  auto on_text = [&](std::string_view piece) {
    std::string shown;
    std::string_view text = piece;
    if (hold) {
      shown = hold->feed(piece);
      text = shown;
    }
    if (streaming() && !text.empty()) {
      write(event(chat     ? chat_chunk_json(header_, {{"content", text}}, nullptr, take_logprobs(), choice)
                  : native ? native_chunk(text)
                           : text_chunk_json(header_, text, nullptr, take_logprobs(), choice)));
    } else if (Clock::now() - last_check > check_every) {
      last_check = Clock::now();
      write(probe);
    }
  };
  GenerationOptions options = options_;
  options.cancel = &stop;
  options.speculation = model_.speculation;
  options.speculation.draft = lease->draft_session();
  if (streaming() && options.top_logprobs >= 0) {
    options.on_logprob = [&](const TokenLogprob& entry) { pending.push_back(entry); };
  }
  if (streaming() && native) {
    options.on_generated_token = [&](int32_t token) {
      pending_tokens.push_back(token);
      ++predicted;
    };
  }
  // The choices run one after another on the leased session: the prompt is prefilled once, each
  // later choice feeding only its last token again.
  Json choices = Json::array();
  GenerationResult totals;
  std::string tail;
  for (choice = 0; choice < request_.n; ++choice) {
    if (streaming() && chat) {
      write(event(chat_chunk_json(header_, {{"role", "assistant"}, {"content", ""}}, nullptr, nullptr, choice)));
    }
    if (streaming() && !echo_text_.empty()) {
      write(event(text_chunk_json(header_, echo_text_, nullptr, nullptr, choice)));
    }
    pending.clear();
    logprob_offset = 0;
    if (parse_tool_calls_) {
      hold.emplace(tool_syntax_, tool_call_forced_);
    }
    options.sampling.seed = options_.sampling.seed + static_cast<uint64_t>(choice);
    auto result = model_.engine->generate(lease->session(), prompt_, options, on_text);
    if (!result.ok()) {
      const Json error = error_json(api_error(result.status()));
      write(streaming() ? event(error) + std::string(done) : dump_json_text(error));
      return;
    }
    if (result->stop_reason == StopReason::kCancelled) {
      end_cancelled();
      return;
    }
    model_.metrics->count_generation(static_cast<int64_t>(result->prompt_tokens.size()) - result->cached_prompt_tokens,
                                     result->cached_prompt_tokens, static_cast<int64_t>(result->tokens.size()),
                                     result->prefill_seconds, result->decode_seconds);
    if (choice == 0) {
      totals.prompt_tokens = result->prompt_tokens;
      totals.cached_prompt_tokens = result->cached_prompt_tokens;
    }
    totals.tokens.insert(totals.tokens.end(), result->tokens.begin(), result->tokens.end());
    totals.prefill_seconds += result->prefill_seconds;
    totals.decode_seconds += result->decode_seconds;
    totals.decode_steps += result->decode_steps;
    totals.speculation.drafted += result->speculation.drafted;
    totals.speculation.accepted += result->speculation.accepted;
    totals.speculation.checks += result->speculation.checks;
    NativeCompletionEnd end{&*result,
                            &options_.sampling,
                            request_.max_tokens.value_or(-1),
                            request_.return_tokens,
                            header_.model,
                            static_cast<int64_t>(lease->slot())};
    if (native && !streaming()) {
      write(dump_json_text(native_final_json(
          result->text, end,
          options_.top_logprobs >= 0 ? native_probabilities_json(result->logprobs, token_text_) : Json())));
      return;
    }
    if (native) {
      end.unsent_tokens = &pending_tokens;
      write(event(native_final_json("", end, pending.empty() ? Json() : take_logprobs())));
      return;
    }
    if (!streaming()) {
      Json logprobs = nullptr;
      if (options_.top_logprobs >= 0 && request_.echo) {
        std::vector<TokenLogprob> scored = std::move(result->prompt_logprobs);
        scored.insert(scored.end(), result->logprobs.begin(), result->logprobs.end());
        logprobs = echo_logprobs_json(prompt_.front(), scored, token_text_);
      } else if (options_.top_logprobs >= 0) {
        logprobs = chat ? chat_logprobs_json(result->logprobs, token_text_)
                        : text_logprobs_json(result->logprobs, token_text_, 0);
      }
      result->text.insert(0, echo_text_);
      if (parse_tool_calls_) {
        choices.push_back(chat_tool_choice_json(choice, *result,
                                                parse_tool_calls(result->text, tool_syntax_, request_.tool_functions),
                                                call_id_prefix(choice), std::move(logprobs)));
      } else {
        choices.push_back(chat ? chat_choice_json(choice, *result, std::move(logprobs))
                               : text_choice_json(choice, *result, std::move(logprobs)));
      }
      continue;
    }
    Json finish(finish_reason(result->stop_reason));
    if (hold) {
      // The held text ends the reply: as calls where it parses as calls, else as text.
      const ParsedReply reply = parse_tool_calls(hold->held(), tool_syntax_, request_.tool_functions);
      const std::string rest = reply.calls.empty() ? std::string(hold->held()) : reply.content.value_or("");
      if (!rest.empty()) {
        write(event(chat_chunk_json(header_, {{"content", rest}}, nullptr, take_logprobs(), choice)));
      }
      if (!reply.calls.empty()) {
        write(
            event(chat_chunk_json(header_, {{"tool_calls", tool_calls_json(reply.calls, call_id_prefix(choice), true)}},
                                  nullptr, pending.empty() ? Json() : take_logprobs(), choice)));
        finish = "tool_calls";
      }
    }
    Json last =
        chat ? chat_chunk_json(header_, Json::object(), finish, pending.empty() ? Json() : take_logprobs(), choice)
             : text_chunk_json(header_, "", finish, pending.empty() ? Json() : take_logprobs(), choice);
    if (choice + 1 < request_.n) {
      write(event(last));
    } else {
      last["timings"] = timings_json(totals);
      tail = event(last);
    }
  }
  if (!streaming()) {
    write(dump_json_text(chat ? chat_completion_json(header_, std::move(choices), totals)
                              : text_completion_json(header_, std::move(choices), totals)));
    return;
  }
  if (request_.include_usage) {
    tail += event(usage_chunk_json(header_, chat, totals));
  }
  write(tail + std::string(done));
}

}  // namespace staticlm::server
