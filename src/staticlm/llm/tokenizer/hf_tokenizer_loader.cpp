// SPDX-License-Identifier: Apache-2.0
// load_tokenizer_json: reads tokenizer.json (and tokenizer_config.json) into HfTokenizerParts.
#include <optional>
#include <string>

#include "staticlm/core/utf8.h"
#include "staticlm/llm/tokenizer/hf_tokenizer.h"

namespace staticlm {
namespace {

constexpr std::string_view kJsonFile = "tokenizer.json";
constexpr std::string_view kConfigFile = "tokenizer_config.json";

const Json& member_or_null(const Json& object, std::string_view key) {
  static const Json kNull;
  const Json* member = find_member(object, key);
  return member == nullptr ? kNull : *member;
}

// A token named in tokenizer_config.json: "<s>", {"content": "<s>", ...} or null.
Result<std::optional<std::string>> read_config_token(const Json& config, std::string_view key) {
  const Json* value = find_member(config, key);
  if (value == nullptr || value->is_null()) return std::optional<std::string>();
  if (value->is_string()) return std::optional<std::string>(value->get<std::string>());
  if (value->is_object()) {
    STATICLM_ASSIGN_OR_RETURN(std::string content, read_string(*value, "content", key));
    return std::optional<std::string>(std::move(content));
  }
  return invalid_argument(key, ": expected a token string or {\"content\": ...}, found ", json_preview(*value));
}

// The id of `token` the way the tokenizer will resolve it: added tokens first, then the vocabulary.
std::optional<int32_t> lookup(const HfTokenizerParts& parts, std::string_view token) {
  for (const AddedToken& added : parts.added_tokens) {
    if (added.content == token) return added.id;
  }
  auto it = parts.model->vocab().find(token);
  if (it == parts.model->vocab().end()) return std::nullopt;
  return it->second;
}

Result<std::optional<int32_t>> config_token_id(const HfTokenizerParts& parts, const Json& config,
                                               std::string_view key) {
  STATICLM_ASSIGN_OR_RETURN(std::optional<std::string> token, read_config_token(config, key));
  if (!token) return std::optional<int32_t>();
  std::optional<int32_t> id = lookup(parts, *token);
  if (!id) {
    return invalid_argument(key, ": token '", utf8_repair(*token), "' is neither an added token nor in the vocabulary");
  }
  return id;
}

Status apply_config(const Json& config, HfTokenizerParts& parts) {
  STATICLM_ASSIGN_OR_RETURN(std::optional<int32_t> bos, config_token_id(parts, config, "bos_token"));
  STATICLM_ASSIGN_OR_RETURN(std::optional<int32_t> eos, config_token_id(parts, config, "eos_token"));
  // A config that names no bos_token (Qwen: null) means the model has none.
  if (find_member(config, "bos_token") != nullptr) parts.bos_id = bos;
  if (find_member(config, "eos_token") != nullptr)
    parts.eos_ids = eos ? std::vector<int32_t>{*eos} : std::vector<int32_t>{};
  STATICLM_ASSIGN_OR_RETURN(parts.clean_up_tokenization_spaces,
                            read_bool(config, "clean_up_tokenization_spaces", false, ""));

  const Json* extra = find_member(config, "additional_special_tokens");
  if (extra != nullptr && !extra->is_null()) {
    if (!extra->is_array()) {
      return invalid_argument("additional_special_tokens: expected an array, found ", json_preview(*extra));
    }
    for (const Json& item : *extra) {
      std::optional<std::string> token;
      const Json* content = find_member(item, "content");
      if (item.is_string()) token = item.get<std::string>();
      if (content != nullptr && content->is_string()) token = content->get<std::string>();
      if (!token) {
        return invalid_argument("additional_special_tokens: expected token strings, found ", json_preview(item));
      }
      // Unknown names are ignored: transformers also tolerates stale entries here.
      if (std::optional<int32_t> id = lookup(parts, *token)) parts.extra_special_ids.push_back(*id);
    }
  }

  // add_bos_token / add_eos_token only fill in for a post-processor that adds nothing; when the
  // tokenizer.json has a template, it is what transformers and the JavaScript port follow.
  STATICLM_ASSIGN_OR_RETURN(bool add_bos, read_bool(config, "add_bos_token", false, ""));
  STATICLM_ASSIGN_OR_RETURN(bool add_eos, read_bool(config, "add_eos_token", false, ""));
  SpecialTokenTemplate& special = parts.special_template;
  bool template_adds_nothing = special.prefix.empty() && special.suffix.empty();
  if (template_adds_nothing && add_bos && parts.bos_id) special.prefix.push_back(*parts.bos_id);
  if (template_adds_nothing && add_eos && !parts.eos_ids.empty()) special.suffix.push_back(parts.eos_ids.front());
  return ok_status();
}

Result<HfTokenizerParts> read_parts(const Json& document) {
  HfTokenizerParts parts;
  const Json* model = find_member(document, "model");
  if (model == nullptr || model->is_null()) return invalid_argument("model: required object is missing");
  STATICLM_ASSIGN_OR_RETURN(parts.model, BpeModel::from_json(*model, "model"));
  STATICLM_ASSIGN_OR_RETURN(parts.normalizer, make_normalizer(member_or_null(document, "normalizer"), "normalizer"));
  STATICLM_ASSIGN_OR_RETURN(parts.pre_tokenizer,
                            make_pre_tokenizer(member_or_null(document, "pre_tokenizer"), "pre_tokenizer"));
  STATICLM_ASSIGN_OR_RETURN(parts.decoder, make_token_decoder(member_or_null(document, "decoder"), "decoder"));
  STATICLM_ASSIGN_OR_RETURN(parts.special_template,
                            read_post_processor(member_or_null(document, "post_processor"), "post_processor"));
  STATICLM_ASSIGN_OR_RETURN(parts.added_tokens, read_added_tokens(document));

  // Without a config, the template is the best guide to bos/eos.
  if (!parts.special_template.prefix.empty()) parts.bos_id = parts.special_template.prefix.front();
  if (!parts.special_template.suffix.empty()) parts.eos_ids = {parts.special_template.suffix.back()};
  return parts;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> load_tokenizer_json(std::string_view json_text,
                                                       std::optional<std::string_view> tokenizer_config_json) {
  STATICLM_ASSIGN_OR_RETURN(Json document, parse_json_document(json_text, kJsonFile));
  Result<HfTokenizerParts> parts = read_parts(document);
  if (!parts.ok()) return parts.status().with_context(kJsonFile);
  if (tokenizer_config_json) {
    STATICLM_ASSIGN_OR_RETURN(Json config, parse_json_document(*tokenizer_config_json, kConfigFile));
    Status status = apply_config(config, *parts);
    if (!status.ok()) return status.with_context(kConfigFile);
  }
  return std::unique_ptr<Tokenizer>(new HfTokenizer(std::move(parts).value()));
}

}  // namespace staticlm
