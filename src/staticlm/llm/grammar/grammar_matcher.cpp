// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/grammar/grammar_matcher.h"

#include <algorithm>

namespace staticlm {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar)
    : grammar_(std::move(grammar)), automaton_(grammar_->automaton()) {
  seeds_.push_back(intern(automaton_.root_start(), kEmptyStack));
  close_over(seeds_);
}

int32_t GrammarMatcher::intern(int32_t position, int32_t parent) {
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(position)) << 32) | static_cast<uint32_t>(parent);
  auto [it, inserted] = node_ids_.emplace(key, static_cast<int32_t>(nodes_.size()));
  if (inserted) {
    nodes_.push_back({position, parent});
  }
  return it->second;
}

void GrammarMatcher::close_over(std::vector<int32_t>& seeds) {
  live_.clear();
  can_end_ = false;
  std::vector<int32_t> seen;
  while (!seeds.empty()) {
    const int32_t id = seeds.back();
    seeds.pop_back();
    if (std::find(seen.begin(), seen.end(), id) != seen.end()) {
      continue;
    }
    seen.push_back(id);
    const StackNode node = nodes_[static_cast<size_t>(id)];
    if (automaton_.reads_bytes(node.position)) {
      live_.push_back(id);
    }
    for (const GrammarCall& call : automaton_.calls(node.position)) {
      const int32_t ret = intern(call.return_position, node.parent);
      seeds.push_back(intern(automaton_.rules()[static_cast<size_t>(call.rule)].start, ret));
    }
    if (automaton_.is_final(node.position)) {
      if (node.parent == kEmptyStack) {
        can_end_ = true;
      } else {
        seeds.push_back(node.parent);
      }
    }
  }
}

bool GrammarMatcher::walk(std::string_view bytes, bool commit) {
  const std::vector<int32_t> saved_live = live_;
  const bool saved_can_end = can_end_;
  bool fits = true;
  for (char c : bytes) {
    const auto byte = static_cast<uint8_t>(c);
    seeds_.clear();
    for (int32_t id : live_) {
      const StackNode node = nodes_[static_cast<size_t>(id)];
      const int32_t next = automaton_.next(node.position, byte);
      if (next != kNoPosition) {
        seeds_.push_back(intern(next, node.parent));
      }
    }
    if (seeds_.empty()) {
      fits = false;
      break;
    }
    close_over(seeds_);
  }
  if (!fits || !commit) {
    live_ = saved_live;
    can_end_ = saved_can_end;
    return fits;
  }
  bytes_accepted_ += static_cast<int64_t>(bytes.size());
  return true;
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  return walk(bytes, /*commit=*/true);
}

bool GrammarMatcher::accepts(std::string_view bytes) {
  return walk(bytes, /*commit=*/false);
}

Status GrammarMatcher::accept_token(int32_t id) {
  const TokenVocabulary& vocab = grammar_->vocabulary();
  if (id < 0 || id >= vocab.size()) {
    return invalid_argument("grammar: token ", id, " is outside the vocabulary [0, ", vocab.size(), ")");
  }
  const std::string_view piece = vocab.piece(id);
  if (piece.empty() || !accept_bytes(piece)) {
    return invalid_argument("grammar: token ", id, " is not allowed after ", bytes_accepted_, " bytes of output");
  }
  return ok_status();
}

bool GrammarMatcher::stack_dependent_token_fits(CursorExpander& expander, int32_t node_id, std::string_view piece) {
  expander.truncate_arena(0);
  const StackNode node = nodes_[static_cast<size_t>(node_id)];
  const int32_t first = automaton_.next(node.position, static_cast<uint8_t>(piece[0]));
  if (first == kNoPosition) {
    return false;
  }
  cursors_.assign(1, Cursor{first, kNoFrame, node.parent});
  for (size_t i = 1; i < piece.size() && !cursors_.empty(); ++i) {
    expanded_.clear();
    expander.expand(cursors_, expanded_);
    next_cursors_.clear();
    expander.advance(expanded_, static_cast<uint8_t>(piece[i]), next_cursors_);
    std::swap(cursors_, next_cursors_);
  }
  return !cursors_.empty();
}

void GrammarMatcher::fill_mask(TokenBitmask& mask) {
  mask.clear();
  const TokenVocabulary& vocab = grammar_->vocabulary();
  CursorExpander expander(automaton_, nodes_);
  for (int32_t id : live_) {
    const PositionTokens& tokens = grammar_->position_tokens(nodes_[static_cast<size_t>(id)].position);
    mask.set_all(tokens.accepted_bits);
    for (int32_t token : tokens.accepted_ids) {
      mask.set(token);
    }
    for (int32_t token : tokens.stack_dependent) {
      if (!mask.test(token) && stack_dependent_token_fits(expander, id, vocab.piece(token))) {
        mask.set(token);
      }
    }
  }
}

}  // namespace staticlm
