// SPDX-License-Identifier: Apache-2.0
// A conversation with a model over one session: each turn renders the whole conversation with the
// chat template, and the session's cache of the earlier turns is reused, so only the new turn is
// prefilled (generate's reuse_cached_prefix). `staticlm run --chat` drives one; the server renders
// requests with the same helpers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "staticlm/chat/program_chat_template.h"
#include "staticlm/llm/engine.h"

namespace staticlm {

// A rendered chat prompt as tokens: the template writes the special tokens itself (BOS included
// where the model wants one), so the tokenizer adds none, as transformers' apply_chat_template.
Result<std::vector<int32_t>> encode_chat_prompt(const Tokenizer& tokenizer, std::string_view rendered);

// The engine's generation defaults plus the template's turn ends (end_of_turn_ids as more eos ids,
// stop strings) and prefix reuse.
GenerationOptions chat_generation_options(const Engine& engine, const ProgramChatTemplate& chat);

struct ChatTurn {
  GenerationResult result;
  // Earlier turns (each a user message and its reply) dropped from the start of the conversation
  // so that this message fit with room for its reply.
  int64_t dropped_turns = 0;
};

class ChatConversation {
 public:
  // Both must outlive the conversation.
  ChatConversation(const Engine& engine, const ProgramChatTemplate& chat, std::unique_ptr<LlmSession> session);

  // A system message leads every rendering (empty: none).
  void set_system(std::string text) { system_ = std::move(text); }
  // Forgets the turns (the system message stays).
  void reset() { turns_ = nlohmann::ordered_json::array(); }
  const nlohmann::ordered_json& turns() const { return turns_; }
  int64_t cached_tokens() const { return session_->position(); }
  int64_t context_length() const { return session_->max_cache_len(); }

  // Adds the user's message, generates the reply (at most `options.max_new_tokens`, fewer when the
  // context fills first: StopReason::kContextFull) and streams it; the reply joins the
  // conversation, cut short or not. When the conversation with this message leaves no room for
  // max_new_tokens, the oldest turns are dropped first (the system message stays), and the cache
  // of what still matches is reused. Fails with ResourceExhausted, before any work, when even the
  // system message and this message alone leave no room for a token; nothing changes then.
  Result<ChatTurn> send(const std::string& user_text, const GenerationOptions& options,
                        const TextCallback& on_text = {});

 private:
  const Engine& engine_;
  // The conversation from turns_[first_turn] on, then the user's message, as prompt tokens.
  Result<std::vector<int32_t>> render_prompt(size_t first_turn, const std::string& user_text) const;

  const ProgramChatTemplate& chat_;
  std::unique_ptr<LlmSession> session_;
  std::string system_;
  nlohmann::ordered_json turns_ = nlohmann::ordered_json::array();
};

}  // namespace staticlm
