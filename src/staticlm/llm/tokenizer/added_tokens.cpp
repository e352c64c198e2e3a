// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/tokenizer/added_tokens.h"

#include <algorithm>

#include <utf8proc.h>

#include "staticlm/core/utf8.h"
#include "staticlm/llm/tokenizer/bpe_model.h"

namespace staticlm {
namespace {

// Where the character that ends at `pos` starts (pos - 1 for an ill-formed byte).
size_t previous_char_start(std::string_view text, size_t pos) {
  size_t start = pos - 1;
  while (start > 0 && pos - start < 4 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  char32_t code_point = 0;
  return utf8_decode_char(text, start, code_point) == pos - start ? start : pos - 1;
}

char32_t char_before(std::string_view text, size_t pos) {
  char32_t code_point = 0xFFFD;
  size_t start = previous_char_start(text, pos);
  if (utf8_decode_char(text, start, code_point) != pos - start) code_point = 0xFFFD;
  return code_point;
}

char32_t char_at(std::string_view text, size_t pos) {
  char32_t code_point = 0xFFFD;
  if (utf8_decode_char(text, pos, code_point) == 0) code_point = 0xFFFD;
  return code_point;
}

// A word character for single_word tokens: alphanumeric or '_' (the \w of Hugging Face).
bool is_word_char(char32_t code_point) {
  if (code_point == '_') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(code_point))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_PC: return true;
    default: return false;
  }
}

// Moves `begin` left over white space, never before `floor`.
size_t extend_left(std::string_view text, size_t begin, size_t floor) {
  while (begin > floor) {
    size_t start = previous_char_start(text, begin);
    if (start < floor || !utf8_is_white_space(char_before(text, begin))) break;
    begin = start;
  }
  return begin;
}

size_t extend_right(std::string_view text, size_t end) {
  while (end < text.size()) {
    char32_t code_point = 0;
    size_t length = utf8_decode_char(text, end, code_point);
    if (length == 0 || !utf8_is_white_space(code_point)) break;
    end += length;
  }
  return end;
}

}  // namespace

Result<std::vector<AddedToken>> read_added_tokens(const Json& document) {
  std::vector<AddedToken> tokens;
  const Json* entries = find_member(document, "added_tokens");
  if (entries == nullptr || entries->is_null()) return tokens;
  if (!entries->is_array()) {
    return invalid_argument("added_tokens: expected an array, found ", json_preview(*entries));
  }
  for (size_t i = 0; i < entries->size(); ++i) {
    const Json& entry = (*entries)[i];
    std::string where = str_cat("added_tokens[", i, "]");
    if (!entry.is_object()) {
      return invalid_argument(where, ": expected an object, found ", json_preview(entry));
    }
    AddedToken token;
    STATICLM_ASSIGN_OR_RETURN(int64_t id, read_int(entry, "id", -1, 0, kMaxTokenId - 1, where));
    if (id < 0) return invalid_argument(where, ".id: required id is missing");
    token.id = static_cast<int32_t>(id);
    STATICLM_ASSIGN_OR_RETURN(token.content, read_string(entry, "content", where));
    if (token.content.empty()) return invalid_argument(where, ".content: an added token cannot be empty");
    if (!utf8_is_valid(token.content)) return invalid_argument(where, ".content: not valid UTF-8");
    STATICLM_ASSIGN_OR_RETURN(token.special, read_bool(entry, "special", false, where));
    STATICLM_ASSIGN_OR_RETURN(token.lstrip, read_bool(entry, "lstrip", false, where));
    STATICLM_ASSIGN_OR_RETURN(token.rstrip, read_bool(entry, "rstrip", false, where));
    STATICLM_ASSIGN_OR_RETURN(token.single_word, read_bool(entry, "single_word", false, where));
    // Hugging Face defaults "normalized" to true for non-special tokens.
    STATICLM_ASSIGN_OR_RETURN(token.normalized, read_bool(entry, "normalized", !token.special, where));
    tokens.push_back(std::move(token));
  }
  return tokens;
}

void AddedTokenMatcher::add(const AddedToken& token) {
  tokens_.push_back(token);
}

void AddedTokenMatcher::finish() {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    by_first_byte_[static_cast<uint8_t>(tokens_[i].content[0])].push_back(i);
  }
  for (auto& bucket : by_first_byte_) {
    std::stable_sort(bucket.begin(), bucket.end(),
                     [&](size_t a, size_t b) { return tokens_[a].content.size() > tokens_[b].content.size(); });
  }
}

const AddedToken* AddedTokenMatcher::match_at(std::string_view text, size_t pos, bool include_special) const {
  for (size_t index : by_first_byte_[static_cast<uint8_t>(text[pos])]) {
    const AddedToken& token = tokens_[index];
    if (!include_special && token.special) continue;
    if (text.compare(pos, token.content.size(), token.content) != 0) continue;
    if (token.single_word) {
      size_t end = pos + token.content.size();
      if (pos > 0 && is_word_char(char_before(text, pos))) continue;
      if (end < text.size() && is_word_char(char_at(text, end))) continue;
    }
    return &token;
  }
  return nullptr;
}

std::vector<TextSegment> AddedTokenMatcher::split(std::string_view text, bool include_special) const {
  std::vector<TextSegment> segments;
  size_t plain_begin = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const AddedToken* token = tokens_.empty() ? nullptr : match_at(text, pos, include_special);
    if (token == nullptr) {
      ++pos;
      continue;
    }
    size_t begin = token->lstrip ? extend_left(text, pos, plain_begin) : pos;
    size_t end = pos + token->content.size();
    if (token->rstrip) end = extend_right(text, end);
    if (begin > plain_begin) segments.push_back({plain_begin, begin, -1});
    segments.push_back({begin, end, token->id});
    pos = end;
    plain_begin = end;
  }
  if (plain_begin < text.size()) segments.push_back({plain_begin, text.size(), -1});
  return segments;
}

}  // namespace staticlm
