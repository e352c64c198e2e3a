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

Result<ChatTurn> ChatConversation::send(const std::string& user_text, const GenerationOptions& options,
                                        const TextCallback& on_text) {
  STATICLM_ASSIGN_OR_RETURN(const Tokenizer* tokenizer, engine_.tokenizer());
  ChatRenderInputs inputs;
  if (!system_.empty()) {
    inputs.messages.push_back({{"role", "system"}, {"content", system_}});
  }
  for (const auto& turn : turns_) {
    inputs.messages.push_back(turn);
  }
  inputs.messages.push_back({{"role", "user"}, {"content", user_text}});
  STATICLM_ASSIGN_OR_RETURN(std::string rendered, chat_.chat_template.render(inputs));
  STATICLM_ASSIGN_OR_RETURN(std::vector<int32_t> prompt, encode_chat_prompt(*tokenizer, rendered));
  const auto prompt_len = static_cast<int64_t>(prompt.size());
  const int64_t room = max_new_tokens_that_fit(prompt_len, context_length());
  if (room < 1) {
    return resource_exhausted("the conversation with this message is ", prompt_len, " tokens, and the context holds ",
                              context_length(), ": reset the conversation (/reset), send a shorter message, or ",
                              "export with a larger max_cache_len");
  }
  GenerationOptions limited = options;
  limited.reuse_cached_prefix = true;
  limited.add_special_tokens = false;
  limited.max_new_tokens = std::min(options.max_new_tokens, room);
  STATICLM_ASSIGN_OR_RETURN(GenerationResult result, engine_.generate(*session_, prompt, limited, on_text));
  ChatTurn turn;
  turn.context_full =
      result.stop_reason == StopReason::kMaxNewTokens && limited.max_new_tokens < options.max_new_tokens;
  turns_.push_back({{"role", "user"}, {"content", user_text}});
  turns_.push_back({{"role", "assistant"}, {"content", result.text}});
  turn.result = std::move(result);
  return turn;
}

}  // namespace staticlm
