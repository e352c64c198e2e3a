// SPDX-License-Identifier: Apache-2.0
#include "staticlm/server/embeddings_endpoint.h"

#include <bit>
#include <cstring>

#include "staticlm/server/completion_request.h"

namespace staticlm::server {
namespace {

constexpr std::string_view kFields[] = {"input", "model", "encoding_format", "dimensions", "user"};

Status field_error(std::string_view field, std::string_view message) {
  return invalid_argument("'", field, "': ", message);
}

Result<std::vector<int32_t>> token_ids(const Json& ids, const EmbeddingLimits& limits) {
  std::vector<int32_t> tokens;
  for (const Json& id : ids) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= limits.vocab_size) {
      return field_error("input", str_cat("expected token ids in [0, ", limits.vocab_size, "), found ", id.dump()));
    }
    tokens.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return tokens;
}

Result<std::vector<int32_t>> text_tokens(const Json& text, const Tokenizer& tokenizer) {
  auto tokens = tokenizer.encode(text.get<std::string>());
  if (!tokens.ok()) {
    return field_error("input", tokens.status().message());
  }
  return std::move(*tokens);
}

// Standard base64 with padding (RFC 4648), as OpenAI's encoding_format "base64".
std::string base64(std::span<const uint8_t> bytes) {
  constexpr char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t left = bytes.size() - i;
    const uint32_t group = (uint32_t{bytes[i]} << 16) | (left > 1 ? uint32_t{bytes[i + 1]} << 8 : 0u) |
                           (left > 2 ? uint32_t{bytes[i + 2]} : 0u);
    out += kDigits[(group >> 18) & 63];
    out += kDigits[(group >> 12) & 63];
    out += left > 1 ? kDigits[(group >> 6) & 63] : '=';
    out += left > 2 ? kDigits[group & 63] : '=';
  }
  return out;
}

}  // namespace

Result<EmbeddingRequest> parse_embedding_request(std::string_view body, const Tokenizer& tokenizer,
                                                 const EmbeddingLimits& limits) {
  STATICLM_ASSIGN_OR_RETURN(Json json, parse_request_json(body, limits.max_json_depth));
  for (const auto& [name, value] : json.items()) {
    if (std::find(std::begin(kFields), std::end(kFields), name) == std::end(kFields)) {
      return field_error(name, "unrecognized request argument");
    }
  }
  EmbeddingRequest request;
  if (json.contains("encoding_format") && !json["encoding_format"].is_null()) {
    const Json& format = json["encoding_format"];
    if (!format.is_string() || (format != "float" && format != "base64")) {
      return field_error("encoding_format", str_cat("expected \"float\" or \"base64\", found ", format.dump()));
    }
    request.base64 = format == "base64";
  }
  if (json.contains("dimensions") && !json["dimensions"].is_null()) {
    const Json& dimensions = json["dimensions"];
    if (!dimensions.is_number_integer() || dimensions.get<int64_t>() != limits.hidden_size) {
      return field_error("dimensions", str_cat("this model's embeddings have ", limits.hidden_size,
                                               " dimensions and cannot be shortened; found ", dimensions.dump()));
    }
  }
  if (json.contains("user") && !json["user"].is_null() && !json["user"].is_string()) {
    return field_error("user", "expected a string");
  }
  if (!json.contains("input")) {
    return field_error("input", "missing: expected a string, an array of strings or token ids");
  }
  const Json& input = json["input"];
  if (input.is_string()) {
    STATICLM_ASSIGN_OR_RETURN(std::vector<int32_t> tokens, text_tokens(input, tokenizer));
    request.inputs.push_back(std::move(tokens));
  } else if (input.is_array() && !input.empty() && input.front().is_number()) {
    STATICLM_ASSIGN_OR_RETURN(std::vector<int32_t> tokens, token_ids(input, limits));
    request.inputs.push_back(std::move(tokens));
  } else if (input.is_array() && !input.empty()) {
    if (input.size() > kMaxEmbeddingInputs) {
      return field_error("input", str_cat("expected at most ", kMaxEmbeddingInputs, " inputs, found ", input.size()));
    }
    for (const Json& item : input) {
      if (item.is_string()) {
        STATICLM_ASSIGN_OR_RETURN(std::vector<int32_t> tokens, text_tokens(item, tokenizer));
        request.inputs.push_back(std::move(tokens));
      } else if (item.is_array()) {
        STATICLM_ASSIGN_OR_RETURN(std::vector<int32_t> tokens, token_ids(item, limits));
        request.inputs.push_back(std::move(tokens));
      } else {
        return field_error("input", str_cat("expected strings or arrays of token ids, found ", item.type_name()));
      }
    }
  } else {
    return field_error("input", str_cat("expected a string or a non-empty array, found ", input.dump()));
  }
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    const auto count = static_cast<int64_t>(request.inputs[i].size());
    if (count == 0) {
      return field_error("input", str_cat("input ", i, " has no tokens"));
    }
    if (count > limits.context_length) {
      return field_error("input",
                         str_cat("input ", i, " has ", count, " tokens; the context holds ", limits.context_length));
    }
  }
  return request;
}

Json embedding_response_json(const std::vector<std::vector<float>>& embeddings, bool base64_encoded,
                             const std::string& model, int64_t prompt_tokens) {
  static_assert(std::endian::native == std::endian::little, "base64 embeddings are little-endian float32");
  Json data = Json::array();
  for (size_t i = 0; i < embeddings.size(); ++i) {
    Json values;
    if (base64_encoded) {
      std::vector<uint8_t> bytes(embeddings[i].size() * sizeof(float));
      std::memcpy(bytes.data(), embeddings[i].data(), bytes.size());
      values = base64(bytes);
    } else {
      values = embeddings[i];
    }
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", std::move(values)}});
  }
  return {{"object", "list"},
          {"data", std::move(data)},
          {"model", model},
          {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
}

}  // namespace staticlm::server
