// SPDX-License-Identifier: Apache-2.0
#include "staticlm/server/token_endpoints.h"

#include "staticlm/server/completion_request.h"

namespace staticlm::server {

Result<Json> tokenize_request(std::string_view body, const Tokenizer& tokenizer, int max_json_depth) {
  STATICLM_ASSIGN_OR_RETURN(Json json, parse_request_json(body, max_json_depth));
  if (!json.contains("content") || !json["content"].is_string()) {
    return invalid_argument("'content': expected a string");
  }
  for (const char* flag : {"add_special", "with_pieces"}) {
    if (json.contains(flag) && !json[flag].is_boolean()) {
      return invalid_argument("'", flag, "': expected a boolean");
    }
  }
  EncodeOptions encode;
  encode.add_special_tokens = json.value("add_special", false);
  auto tokens = tokenizer.encode(json["content"].get<std::string>(), encode);
  if (!tokens.ok()) {
    return invalid_argument("'content': ", tokens.status().message());
  }
  const bool with_pieces = json.value("with_pieces", false);
  Json out = Json::array();
  for (int32_t id : *tokens) {
    if (with_pieces) {
      STATICLM_ASSIGN_OR_RETURN(std::string piece, tokenizer.id_to_token(id));
      out.push_back({{"id", id}, {"piece", std::move(piece)}});
    } else {
      out.push_back(id);
    }
  }
  return Json{{"tokens", std::move(out)}};
}

Result<Json> detokenize_request(std::string_view body, const Tokenizer& tokenizer, int max_json_depth) {
  STATICLM_ASSIGN_OR_RETURN(Json json, parse_request_json(body, max_json_depth));
  if (!json.contains("tokens") || !json["tokens"].is_array()) {
    return invalid_argument("'tokens': expected an array of token ids");
  }
  std::vector<int32_t> ids;
  for (const Json& id : json["tokens"]) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= tokenizer.vocab_size()) {
      return invalid_argument("'tokens': expected token ids in [0, ", tokenizer.vocab_size(), "), found ", id.dump());
    }
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  auto text = tokenizer.decode(ids, /*skip_special=*/false);
  if (!text.ok()) {
    return invalid_argument("'tokens': ", text.status().message());
  }
  return Json{{"content", *text}};
}

}  // namespace staticlm::server
