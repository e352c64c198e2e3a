// SPDX-License-Identifier: Apache-2.0
// A model's chat format: a Hugging Face chat template (Jinja) rendered the way transformers'
// apply_chat_template renders it, so a conversation becomes the exact prompt text the model was
// trained on. Parse once, render per request (thread-safe).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "staticlm/chat/jinja/template.h"
#include "staticlm/core/result.h"

namespace staticlm {

struct ChatRenderInputs {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // [{role, content, ...}]
  nlohmann::ordered_json tools;  // null when the request has none (transformers passes None)
  bool add_generation_prompt = true;
  // More template variables (enable_thinking, ...), an object; they may not shadow the names above.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

class ChatTemplate {
 public:
  // `origin` says where the text came from, for messages ("embedded chat_template.jinja").
  // `special_tokens` binds bos_token, eos_token, ... as tokenizer_config.json gives them.
  // Fails (InvalidArgument, naming the origin, line and column) when the template does not parse.
  static Result<ChatTemplate> parse(std::string source, std::string origin,
                                    std::vector<std::pair<std::string, std::string>> special_tokens);

  // Fails (InvalidArgument) when the template raises or hits an error, naming the origin, line and
  // column; ResourceExhausted past the render limits.
  Result<std::string> render(const ChatRenderInputs& inputs) const;

  const std::string& source() const { return source_; }
  const std::string& origin() const { return origin_; }
  // Whether the template reads the variable `tools` (a request with tools is refused otherwise).
  bool uses_tools() const;

 private:
  ChatTemplate(jinja::Template parsed, std::string source, std::string origin,
               std::vector<std::pair<std::string, std::string>> special_tokens);

  jinja::Template template_;
  std::string source_;
  std::string origin_;
  std::vector<std::pair<std::string, std::string>> special_tokens_;
};

// The ChatML template staticlm uses for a model that carries none (docs/chat.md).
std::string_view default_chat_template_source();

// The chat template in a tokenizer_config.json: `chat_template` as a string, or the entry named
// "default" of a list of {name, template}. NotFound when there is none; InvalidArgument (naming
// `origin`) for text that is not JSON or a chat_template of the wrong shape.
Result<std::string> chat_template_from_tokenizer_config(std::string_view json, std::string_view origin);

// bos_token, eos_token, unk_token, pad_token from a tokenizer_config.json (a string, or an
// AddedToken object's "content"); those absent are left out. Fails like the function above.
Result<std::vector<std::pair<std::string, std::string>>> special_tokens_from_tokenizer_config(std::string_view json,
                                                                                              std::string_view origin);

}  // namespace staticlm
