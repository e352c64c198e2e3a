// SPDX-License-Identifier: Apache-2.0
// What the grammar tests share: a vocabulary of single bytes, under which a matcher sees text
// byte by byte, and whether a grammar takes a whole text.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/llm/grammar/compiled_grammar.h"
#include "staticlm/llm/grammar/grammar_matcher.h"
#include "staticlm/llm/grammar/token_vocabulary.h"

namespace staticlm::testing {

inline std::shared_ptr<const TokenVocabulary> byte_vocabulary() {
  static const std::shared_ptr<const TokenVocabulary> vocab = [] {
    std::vector<std::string> pieces;
    for (int b = 0; b < 256; ++b) {
      pieces.push_back(std::string(1, static_cast<char>(b)));
    }
    return TokenVocabulary::from_pieces(std::move(pieces));
  }();
  return vocab;
}

// `text` is a complete match of `grammar`.
inline bool grammar_matches(const std::shared_ptr<const CompiledGrammar>& grammar, std::string_view text) {
  GrammarMatcher matcher(grammar);
  return matcher.accept_bytes(text) && matcher.can_end();
}

}  // namespace staticlm::testing
