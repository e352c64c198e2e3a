// SPDX-License-Identifier: Apache-2.0
// Added tokens (tokenizer.json "added_tokens"): strings such as "<|im_start|>" that are matched
// in the input before the model sees it and map straight to their ids.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/llm/tokenizer/json_fields.h"

namespace staticlm {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false;       // the match also swallows white space on its left
  bool rstrip = false;       // ... and on its right
  bool single_word = false;  // matches only when not inside a word
  bool normalized = false;   // matched against normalized text instead of the raw input
};

// Reads the "added_tokens" array (missing or null gives none). Fails with InvalidArgument for an
// entry without a string content or an id outside [0, kMaxTokenId), or for empty content.
Result<std::vector<AddedToken>> read_added_tokens(const Json& document);

// A piece of text between matches, or one matched added token.
struct TextSegment {
  size_t begin = 0;  // byte range in the text given to split()
  size_t end = 0;
  int32_t added_id = -1;  // -1 for plain text
};

// Finds added tokens in text: at each position the longest token that matches wins, scanning
// left to right (as both the Rust and the JavaScript tokenizers do).
class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // Keeps the tokens for which `keep` is true.
  template <typename Keep>
  AddedTokenMatcher(const std::vector<AddedToken>& tokens, Keep&& keep) {
    for (const AddedToken& token : tokens) {
      if (keep(token)) add(token);
    }
    finish();
  }

  bool empty() const { return tokens_.empty(); }

  // Splits `text` into plain segments and added-token segments, covering it completely. With
  // `include_special` false, special tokens are not recognised (their text stays plain).
  std::vector<TextSegment> split(std::string_view text, bool include_special) const;

 private:
  void add(const AddedToken& token);
  void finish();
  // The longest allowed match starting at `pos`, or nullptr.
  const AddedToken* match_at(std::string_view text, size_t pos, bool include_special) const;

  std::vector<AddedToken> tokens_;
  // Indexes into tokens_ by first byte, longest first.
  std::vector<std::vector<size_t>> by_first_byte_ = std::vector<std::vector<size_t>>(256);
};

}  // namespace staticlm
