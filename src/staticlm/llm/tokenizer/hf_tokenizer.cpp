// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/tokenizer/hf_tokenizer.h"

#include <algorithm>

#include "staticlm/core/utf8.h"

namespace staticlm {

HfTokenizer::HfTokenizer(HfTokenizerParts parts)
    : parts_(std::move(parts)),
      raw_matcher_(parts_.added_tokens, [](const AddedToken& token) { return !token.normalized; }),
      normalized_matcher_(parts_.added_tokens, [](const AddedToken& token) { return token.normalized; }) {
  int32_t size = 0;
  for (const auto& [text, id] : parts_.model->vocab()) size = std::max(size, id + 1);
  for (const AddedToken& token : parts_.added_tokens) size = std::max(size, token.id + 1);
  tokens_.resize(static_cast<size_t>(size));
  for (const auto& [text, id] : parts_.model->vocab()) {
    tokens_[id].text = text;
    tokens_[id].kind = Kind::kVocab;
  }
  // An added token overrides a vocabulary entry with its id (Llama lists "<s>" in both).
  for (const AddedToken& token : parts_.added_tokens) {
    TokenEntry& entry = tokens_[token.id];
    entry.text = token.content;
    entry.kind = Kind::kAdded;
    entry.special = token.special;
    added_ids_[token.content] = token.id;
  }
  for (int32_t id : parts_.extra_special_ids) {
    if (id >= 0 && id < size) tokens_[id].special = true;
  }
}

Status HfTokenizer::encode_plain(std::string_view text, bool at_input_start, bool parse_special,
                                 std::vector<int32_t>& ids) const {
  std::string normalized(text);
  if (parts_.normalizer) {
    STATICLM_ASSIGN_OR_RETURN(normalized, parts_.normalizer->normalize(std::move(normalized)));
  }
  std::vector<TextSegment> segments;
  if (normalized_matcher_.empty()) {
    segments.push_back({0, normalized.size(), -1});
  } else {
    segments = normalized_matcher_.split(normalized, parse_special);
  }
  for (const TextSegment& segment : segments) {
    if (segment.added_id >= 0) {
      ids.push_back(segment.added_id);
      continue;
    }
    std::vector<PreToken> words;
    words.push_back(
        {normalized.substr(segment.begin, segment.end - segment.begin), at_input_start && segment.begin == 0});
    if (parts_.pre_tokenizer) {
      STATICLM_RETURN_IF_ERROR(parts_.pre_tokenizer->pre_tokenize(words));
    }
    for (const PreToken& word : words) parts_.model->encode_word(word.text, ids);
  }
  return ok_status();
}

Result<std::vector<int32_t>> HfTokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  if (!utf8_is_valid(text)) {
    return invalid_argument("encode: the input text is not valid UTF-8");
  }
  std::vector<int32_t> ids;
  if (options.add_special_tokens) {
    ids = parts_.special_template.prefix;
  }
  for (const TextSegment& segment : raw_matcher_.split(text, options.parse_special)) {
    if (segment.added_id >= 0) {
      ids.push_back(segment.added_id);
      continue;
    }
    STATICLM_RETURN_IF_ERROR(encode_plain(text.substr(segment.begin, segment.end - segment.begin), segment.begin == 0,
                                          options.parse_special, ids));
  }
  if (options.add_special_tokens) {
    ids.insert(ids.end(), parts_.special_template.suffix.begin(), parts_.special_template.suffix.end());
  }
  return ids;
}

Result<const HfTokenizer::TokenEntry*> HfTokenizer::entry(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size() || tokens_[id].kind == Kind::kUnused) {
    return out_of_range("token id ", id, " is not in the vocabulary (ids 0..", static_cast<int64_t>(tokens_.size()) - 1,
                        id >= 0 && static_cast<size_t>(id) < tokens_.size() ? ", this one unused)" : ")");
  }
  return &tokens_[id];
}

Result<std::string> HfTokenizer::decode_bytes(std::span<const int32_t> ids, bool skip_special) const {
  std::vector<DecodePiece> pieces;
  pieces.reserve(ids.size());
  for (int32_t id : ids) {
    STATICLM_ASSIGN_OR_RETURN(const TokenEntry* token, entry(id));
    if (skip_special && token->special) continue;
    pieces.push_back({token->text, token->kind == Kind::kAdded});
  }
  std::string out;
  if (!parts_.decoder) {
    // Without a decoder Hugging Face joins the token strings with spaces.
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (i > 0) out.push_back(' ');
      out += pieces[i].text;
    }
    return out;
  }
  STATICLM_RETURN_IF_ERROR(parts_.decoder->decode_chain(pieces));
  for (const DecodePiece& piece : pieces) out += piece.text;
  return out;
}

std::optional<int32_t> HfTokenizer::token_to_id(std::string_view token) const {
  auto added = added_ids_.find(token);
  if (added != added_ids_.end()) return added->second;
  auto it = parts_.model->vocab().find(token);
  if (it == parts_.model->vocab().end()) return std::nullopt;
  return it->second;
}

Result<std::string> HfTokenizer::id_to_token(int32_t id) const {
  STATICLM_ASSIGN_OR_RETURN(const TokenEntry* token, entry(id));
  return token->text;
}

bool HfTokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < tokens_.size() && tokens_[id].special;
}

}  // namespace staticlm
