// SPDX-License-Identifier: Apache-2.0
#include "staticlm/chat/conversation.h"

#include <algorithm>

namespace staticlm {

Result<std::vector<int32_t>> encode_chat_prompt(const Tokenizer& tokenizer, std::string_view rendered) {
  EncodeOptions options;
  options.add_special_tokens = false;
  options.parse_special = true;
  return tokenizer.encode(rendered, options);
}

GenerationOptions chat_generation_options(const Engine& engine, const ProgramChatTemplate& chat) {
  GenerationOptions options = engine.default_generation();
  for (int32_t id : chat.end_of_turn_ids) {
    if (std::find(options.eos_ids.begin(), options.eos_ids.end(), id) == options.eos_ids.end()) {
      options.eos_ids.push_back(id);
    }
  }
  options.stop_strings.insert(options.stop_strings.end(), chat.stop_strings.begin(), chat.stop_strings.end());
  options.add_special_tokens = false;
  options.reuse_cached_prefix = true;
  return options;
}

ChatConversation::ChatConversation(const Engine& engine, const ProgramChatTemplate& chat,
                                   std::unique_ptr<LlmSession> session)
    : engine_(engine), chat_(chat), session_(std::move(session)) {}

Result<std::vector<int32_t>> ChatConversation::render_prompt(size_t first_turn, const std::string& user_text) const {
  STATICLM_ASSIGN_OR_RETURN(const Tokenizer* tokenizer, engine_.tokenizer());
  ChatRenderInputs inputs;
  if (!system_.empty()) {
    inputs.messages.push_back({{"role", "system"}, {"content", system_}});
  }
  for (size_t i = first_turn; i < turns_.size(); ++i) {
    inputs.messages.push_back(turns_[i]);
  }
  inputs.messages.push_back({{"role", "user"}, {"content", user_text}});
  STATICLM_ASSIGN_OR_RETURN(std::string rendered, chat_.chat_template.render(inputs));
  return encode_chat_prompt(*tokenizer, rendered);
}

Result<ChatTurn> ChatConversation::send(const std::string& user_text, const GenerationOptions& options,
                                        const TextCallback& on_text) {
  // Whole turns go, a user message with its reply, so the conversation still starts with a user
  // message after the system one, as templates expect.
  size_t dropped = 0;
  std::vector<int32_t> prompt;
  int64_t room = 0;
  while (true) {
    STATICLM_ASSIGN_OR_RETURN(prompt, render_prompt(dropped, user_text));
    room = max_new_tokens_that_fit(static_cast<int64_t>(prompt.size()), context_length());
    if (room >= options.max_new_tokens || dropped + 2 > turns_.size()) {
      break;
    }
    dropped += 2;
  }
  if (room < 1) {
    return resource_exhausted(system_.empty() ? "this message is " : "the system message and this message are ",
                              prompt.size(), " tokens, and the context holds ", context_length(),
                              ": send a shorter message, or export with a larger max_cache_len");
  }
  GenerationOptions limited = options;
  limited.reuse_cached_prefix = true;
  limited.add_special_tokens = false;
  limited.stop_at_context_end = true;
  STATICLM_ASSIGN_OR_RETURN(GenerationResult result, engine_.generate(*session_, prompt, limited, on_text));
  ChatTurn turn;
  turn.dropped_turns = static_cast<int64_t>(dropped / 2);
  turns_.erase(turns_.begin(), turns_.begin() + static_cast<std::ptrdiff_t>(dropped));
  turns_.push_back({{"role", "user"}, {"content", user_text}});
  turns_.push_back({{"role", "assistant"}, {"content", result.text}});
  turn.result = std::move(result);
  return turn;
}

}  // namespace staticlm
