// SPDX-License-Identifier: Apache-2.0
#include "staticlm/chat/chat_template.h"

#include <algorithm>
#include <utility>

#include "staticlm/chat/jinja/json_values.h"
#include "staticlm/chat/jinja/lexer.h"

namespace staticlm {
namespace {

// Deeper than any real conversation; bounds the recursion of converting request JSON.
constexpr int kMaxMessageDepth = 64;

constexpr std::string_view kSpecialTokenNames[] = {"bos_token", "eos_token", "unk_token", "pad_token"};

Result<nlohmann::ordered_json> parse_config(std::string_view json, std::string_view origin) {
  auto parsed = nlohmann::ordered_json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return invalid_argument(origin, ": expected a JSON object");
  }
  return parsed;
}

Result<jinja::Value> to_value(const nlohmann::ordered_json& json, std::string_view what) {
  auto value = jinja::value_from_json(json, kMaxMessageDepth);
  if (!value.ok()) {
    return value.status().with_context(what);
  }
  return value;
}

}  // namespace

ChatTemplate::ChatTemplate(jinja::Template parsed, std::string source, std::string origin,
                           std::vector<std::pair<std::string, std::string>> special_tokens)
    : template_(std::move(parsed)),
      source_(std::move(source)),
      origin_(std::move(origin)),
      special_tokens_(std::move(special_tokens)) {}

Result<ChatTemplate> ChatTemplate::parse(std::string source, std::string origin,
                                         std::vector<std::pair<std::string, std::string>> special_tokens) {
  auto parsed = jinja::Template::parse(source);
  if (!parsed.ok()) {
    return parsed.status().with_context(str_cat("chat template (", origin, ")"));
  }
  return ChatTemplate(std::move(*parsed), std::move(source), std::move(origin), std::move(special_tokens));
}

bool ChatTemplate::uses_tools() const {
  // The name as the template reads it, not the word in its text or comments.
  auto tokens = jinja::tokenize(source_, jinja::LexerOptions{});
  return tokens.ok() && std::any_of(tokens->begin(), tokens->end(), [](const jinja::Token& token) {
           return token.kind == jinja::TokenKind::kName && token.text == "tools";
         });
}

Result<std::string> ChatTemplate::render(const ChatRenderInputs& inputs) const {
  if (!inputs.messages.is_array()) {
    return invalid_argument("messages: expected an array");
  }
  if (!inputs.extra.is_object()) {
    return invalid_argument("chat template variables: expected an object");
  }
  std::vector<std::pair<std::string, jinja::Value>> variables;
  STATICLM_ASSIGN_OR_RETURN(jinja::Value messages, to_value(inputs.messages, "messages"));
  STATICLM_ASSIGN_OR_RETURN(jinja::Value tools, to_value(inputs.tools, "tools"));
  variables.emplace_back("messages", std::move(messages));
  variables.emplace_back("tools", std::move(tools));
  variables.emplace_back("documents", jinja::Value(jinja::NoneType{}));
  variables.emplace_back("add_generation_prompt", jinja::Value(inputs.add_generation_prompt));
  for (const auto& [name, text] : special_tokens_) {
    variables.emplace_back(name, jinja::Value(text));
  }
  for (const auto& [name, json] : inputs.extra.items()) {
    for (const auto& [taken, unused] : variables) {
      if (taken == name) {
        return invalid_argument("chat template variable '", name, "' is set by the request itself");
      }
    }
    STATICLM_ASSIGN_OR_RETURN(jinja::Value value, to_value(json, str_cat("chat template variable '", name, "'")));
    variables.emplace_back(name, std::move(value));
  }
  auto rendered = template_.render(variables);
  if (!rendered.ok()) {
    return rendered.status().with_context(str_cat("chat template (", origin_, ")"));
  }
  return rendered;
}

Result<std::string> chat_template_from_tokenizer_config(std::string_view json, std::string_view origin) {
  STATICLM_ASSIGN_OR_RETURN(nlohmann::ordered_json config, parse_config(json, origin));
  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) {
    return not_found(origin, " has no chat_template");
  }
  if (it->is_string()) {
    return it->get<std::string>();
  }
  if (it->is_array()) {
    for (const auto& entry : *it) {
      if (entry.is_object() && entry.value("name", nlohmann::ordered_json()) == "default") {
        const auto text = entry.find("template");
        if (text != entry.end() && text->is_string()) {
          return text->get<std::string>();
        }
      }
    }
    return invalid_argument(origin,
                            ": chat_template: expected a list entry {\"name\": \"default\", \"template\": "
                            "string}, found none");
  }
  return invalid_argument(origin, ": chat_template: expected a string or a list of {name, template}, found ",
                          it->type_name());
}

Result<std::vector<std::pair<std::string, std::string>>> special_tokens_from_tokenizer_config(std::string_view json,
                                                                                              std::string_view origin) {
  STATICLM_ASSIGN_OR_RETURN(nlohmann::ordered_json config, parse_config(json, origin));
  std::vector<std::pair<std::string, std::string>> tokens;
  for (std::string_view name : kSpecialTokenNames) {
    auto it = config.find(name);
    if (it == config.end() || it->is_null()) {
      continue;
    }
    if (it->is_string()) {
      tokens.emplace_back(name, it->get<std::string>());
    } else if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
      tokens.emplace_back(name, (*it)["content"].get<std::string>());
    } else {
      return invalid_argument(origin, ": ", name, ": expected a string or an object with a string \"content\", found ",
                              it->type_name());
    }
  }
  return tokens;
}

}  // namespace staticlm
