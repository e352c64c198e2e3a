// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/grammar/grammar_matcher.h"

#include <algorithm>

namespace staticlm {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, GrammarMatcherLimits limits)
    : grammar_(std::move(grammar)),
      automaton_(grammar_->automaton()),
      limits_(limits),
      compact_at_(limits.compact_nodes) {
  seeds_.push_back(intern(automaton_.root_start(), kEmptyStack));
  if (!close_over(seeds_)) {
    live_.clear();
    can_end_ = false;
    too_ambiguous_ = true;
    status_ = ambiguity_error();
  }
}

Status GrammarMatcher::ambiguity_error() const {
  return invalid_argument("grammar: after ", bytes_accepted_,
                          " bytes of output the text can be parsed in too many ways at once (more than ",
                          limits_.max_stacks, " stacks, or ", kGrammarCursorBudget,
                          " cursors for the next token); the grammar is too ambiguous (a rule that can match nothing, "
                          "repeated or inside its own recursion, multiplies them): make each text parse one way");
}

int32_t GrammarMatcher::intern(int32_t position, int32_t parent) {
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(position)) << 32) | static_cast<uint32_t>(parent);
  auto [it, inserted] = node_ids_.emplace(key, static_cast<int32_t>(nodes_.size()));
  if (inserted) {
    nodes_.push_back({position, parent});
  }
  return it->second;
}

bool GrammarMatcher::close_over(std::vector<int32_t>& seeds) {
  live_.clear();
  can_end_ = false;
  if (++round_ == 0) {
    std::fill(visited_.begin(), visited_.end(), 0U);
    round_ = 1;
  }
  int32_t visits = 0;
  while (!seeds.empty()) {
    const int32_t id = seeds.back();
    seeds.pop_back();
    if (visited_.size() < nodes_.size()) {
      visited_.resize(nodes_.size(), 0U);
    }
    if (visited_[static_cast<size_t>(id)] == round_) {
      continue;
    }
    visited_[static_cast<size_t>(id)] = round_;
    if (++visits > limits_.max_stacks) {
      seeds.clear();
      return false;
    }
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
  return true;
}

void GrammarMatcher::compact() {
  std::vector<int32_t> renumbered(nodes_.size(), -1);
  for (int32_t id : live_) {
    for (int32_t at = id; at >= 0 && renumbered[static_cast<size_t>(at)] < 0;
         at = nodes_[static_cast<size_t>(at)].parent) {
      renumbered[static_cast<size_t>(at)] = 0;
    }
  }
  // A node's parent is always interned before it, so renumbering in id order keeps parents
  // ahead of their children and maps each parent before it is needed.
  std::vector<StackNode> kept;
  node_ids_.clear();
  for (size_t id = 0; id < nodes_.size(); ++id) {
    if (renumbered[id] < 0) {
      continue;
    }
    StackNode node = nodes_[id];
    if (node.parent >= 0) {
      node.parent = renumbered[static_cast<size_t>(node.parent)];
    }
    renumbered[id] = static_cast<int32_t>(kept.size());
    const uint64_t key =
        (static_cast<uint64_t>(static_cast<uint32_t>(node.position)) << 32) | static_cast<uint32_t>(node.parent);
    node_ids_.emplace(key, renumbered[id]);
    kept.push_back(node);
  }
  for (int32_t& id : live_) {
    id = renumbered[static_cast<size_t>(id)];
  }
  nodes_ = std::move(kept);
  visited_.assign(nodes_.size(), 0U);
  round_ = 0;
  compact_at_ = std::max(limits_.compact_nodes, 2 * nodes_.size());
}

bool GrammarMatcher::walk(std::string_view bytes, bool commit) {
  if (!status_.ok()) {
    return false;
  }
  const std::vector<int32_t> saved_live = live_;
  const bool saved_can_end = can_end_;
  bool fits = true;
  too_ambiguous_ = false;
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
    if (!close_over(seeds_)) {
      too_ambiguous_ = true;
      fits = false;
      break;
    }
  }
  if (!fits || !commit) {
    live_ = saved_live;
    can_end_ = saved_can_end;
    return fits;
  }
  bytes_accepted_ += static_cast<int64_t>(bytes.size());
  if (nodes_.size() > compact_at_) {
    compact();
  }
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
  if (!status_.ok()) {
    return status_;
  }
  if (piece.empty() || !accept_bytes(piece)) {
    if (too_ambiguous_) {
      return ambiguity_error();
    }
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

Status GrammarMatcher::fill_mask(TokenBitmask& mask) {
  mask.clear();
  STATICLM_RETURN_IF_ERROR(status_);
  const TokenVocabulary& vocab = grammar_->vocabulary();
  CursorExpander expander(automaton_, nodes_, kGrammarCursorBudget);
  for (int32_t id : live_) {
    const PositionTokens& tokens = grammar_->position_tokens(nodes_[static_cast<size_t>(id)].position);
    if (tokens.too_ambiguous) {
      mask.clear();
      return ambiguity_error();
    }
    mask.set_all(tokens.accepted_bits);
    for (int32_t token : tokens.accepted_ids) {
      mask.set(token);
    }
    for (int32_t token : tokens.stack_dependent) {
      if (!mask.test(token) && stack_dependent_token_fits(expander, id, vocab.piece(token))) {
        mask.set(token);
      }
      if (expander.budget_left() < 0) {
        mask.clear();
        return ambiguity_error();
      }
    }
  }
  return ok_status();
}

}  // namespace staticlm
