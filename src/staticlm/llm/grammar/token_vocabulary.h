// SPDX-License-Identifier: Apache-2.0
// What the grammar engine knows of a tokenizer: the bytes each token adds to generated text, and
// a byte trie of those pieces in depth-first order, so one walk from a grammar position settles
// every token that shares a prefix at once. Built once per tokenizer (Engine keeps it) and
// immutable; shared by every grammar compiled against it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/llm/tokenizer/tokenizer.h"

namespace staticlm {

class TokenVocabulary {
 public:
  // A trie node: the byte that leads to it, its depth (the piece length), where its subtree ends
  // in the node array, and the first of its tokens in token_order(). Node i's own tokens are
  // token_order()[tokens_begin(i), tokens_begin(i + 1)); its subtree's run to tokens_begin(end).
  struct TrieNode {
    uint32_t subtree_end = 0;
    uint32_t tokens_begin = 0;
    uint32_t depth = 0;
    uint8_t byte = 0;
  };

  // The pieces of every id below tokenizer.vocab_size(): the bytes the token adds after other
  // text (decode_bytes of a plain context token and the id, less the context's bytes, so that
  // SentencePiece's leading space is kept as it is in the middle of generated text). Special
  // tokens and ids the vocabulary does not use get an empty piece: a grammar never allows them.
  static Result<std::shared_ptr<const TokenVocabulary>> build(const Tokenizer& tokenizer);
  // From explicit pieces (tests, benchmarks): pieces[id] is token id's bytes, empty for none.
  static std::shared_ptr<const TokenVocabulary> from_pieces(std::vector<std::string> pieces);

  int32_t size() const { return static_cast<int32_t>(pieces_.size()); }
  std::string_view piece(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }

  // The trie without its root: nodes_[0] is the first child of the empty prefix; a sentinel node
  // at the end holds tokens_begin == token_order().size().
  std::span<const TrieNode> trie() const { return nodes_; }
  std::span<const int32_t> token_order() const { return token_order_; }
  uint32_t max_piece_length() const { return max_piece_length_; }

 private:
  explicit TokenVocabulary(std::vector<std::string> pieces);

  std::vector<std::string> pieces_;
  std::vector<TrieNode> nodes_;
  std::vector<int32_t> token_order_;
  uint32_t max_piece_length_ = 0;
};

}  // namespace staticlm
