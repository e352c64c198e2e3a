// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/grammar/token_vocabulary.h"

#include <algorithm>

namespace staticlm {
namespace {

// A token that decodes to plain text on its own, to stand before each token as its context.
Result<int32_t> plain_context_token(const Tokenizer& tokenizer) {
  EncodeOptions options;
  options.add_special_tokens = false;
  STATICLM_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer.encode("a", options));
  if (ids.empty()) {
    return invalid_argument("the tokenizer encodes \"a\" to no token");
  }
  return ids.back();
}

}  // namespace

Result<std::shared_ptr<const TokenVocabulary>> TokenVocabulary::build(const Tokenizer& tokenizer) {
  STATICLM_ASSIGN_OR_RETURN(const int32_t context, plain_context_token(tokenizer));
  STATICLM_ASSIGN_OR_RETURN(const std::string context_bytes,
                            tokenizer.decode_bytes(std::span<const int32_t>(&context, 1), /*skip_special=*/true));
  std::vector<std::string> pieces(static_cast<size_t>(tokenizer.vocab_size()));
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    if (tokenizer.is_special(id)) {
      continue;
    }
    const int32_t pair[2] = {context, id};
    Result<std::string> both = tokenizer.decode_bytes(pair, /*skip_special=*/true);
    if (!both.ok()) {
      continue;  // an id the vocabulary does not use
    }
    if (both->compare(0, context_bytes.size(), context_bytes) == 0) {
      pieces[static_cast<size_t>(id)] = both->substr(context_bytes.size());
    } else {
      Result<std::string> alone = tokenizer.decode_bytes(std::span<const int32_t>(&id, 1), true);
      if (alone.ok()) {
        pieces[static_cast<size_t>(id)] = std::move(*alone);
      }
    }
  }
  return std::shared_ptr<const TokenVocabulary>(new TokenVocabulary(std::move(pieces)));
}

std::shared_ptr<const TokenVocabulary> TokenVocabulary::from_pieces(std::vector<std::string> pieces) {
  return std::shared_ptr<const TokenVocabulary>(new TokenVocabulary(std::move(pieces)));
}

TokenVocabulary::TokenVocabulary(std::vector<std::string> pieces) : pieces_(std::move(pieces)) {
  for (size_t id = 0; id < pieces_.size(); ++id) {
    if (!pieces_[id].empty()) {
      token_order_.push_back(static_cast<int32_t>(id));
    }
  }
  std::sort(token_order_.begin(), token_order_.end(), [&](int32_t a, int32_t b) {
    const std::string& x = pieces_[static_cast<size_t>(a)];
    const std::string& y = pieces_[static_cast<size_t>(b)];
    // Unsigned byte order, then id, so the order is the same everywhere.
    const int c = std::string_view(x).compare(y);
    return c < 0 || (c == 0 && a < b);
  });
  // Nodes on the path of the previous piece, by depth - 1.
  std::vector<uint32_t> open;
  std::string_view previous;
  auto close_to = [&](size_t depth) {
    while (open.size() > depth) {
      nodes_[open.back()].subtree_end = static_cast<uint32_t>(nodes_.size());
      open.pop_back();
    }
  };
  for (size_t rank = 0; rank < token_order_.size(); ++rank) {
    const std::string_view piece = pieces_[static_cast<size_t>(token_order_[rank])];
    max_piece_length_ = std::max(max_piece_length_, static_cast<uint32_t>(piece.size()));
    size_t common = 0;
    while (common < piece.size() && common < previous.size() && piece[common] == previous[common]) {
      ++common;
    }
    close_to(common);
    for (size_t depth = common; depth < piece.size(); ++depth) {
      open.push_back(static_cast<uint32_t>(nodes_.size()));
      TrieNode node;
      node.byte = static_cast<uint8_t>(piece[depth]);
      node.depth = static_cast<uint32_t>(depth + 1);
      node.tokens_begin = static_cast<uint32_t>(rank);
      nodes_.push_back(node);
    }
    previous = piece;
  }
  close_to(0);
  TrieNode sentinel;
  sentinel.subtree_end = static_cast<uint32_t>(nodes_.size() + 1);
  sentinel.tokens_begin = static_cast<uint32_t>(token_order_.size());
  nodes_.push_back(sentinel);
}

}  // namespace staticlm
