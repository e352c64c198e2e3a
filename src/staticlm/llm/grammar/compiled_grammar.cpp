// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/grammar/compiled_grammar.h"

#include <algorithm>

#include "staticlm/llm/grammar/gbnf_parser.h"
#include "staticlm/llm/grammar/grammar_stack.h"

namespace staticlm {

CompiledGrammar::CompiledGrammar(GrammarAutomaton automaton, std::shared_ptr<const TokenVocabulary> vocabulary)
    : automaton_(std::move(automaton)),
      vocabulary_(std::move(vocabulary)),
      cache_(static_cast<size_t>(automaton_.num_positions())) {}

std::shared_ptr<const CompiledGrammar> CompiledGrammar::create(GrammarAutomaton automaton,
                                                               std::shared_ptr<const TokenVocabulary> vocabulary) {
  return std::shared_ptr<const CompiledGrammar>(new CompiledGrammar(std::move(automaton), std::move(vocabulary)));
}

const PositionTokens& CompiledGrammar::position_tokens(int32_t position) const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cache_[static_cast<size_t>(position)]) {
      return *cache_[static_cast<size_t>(position)];
    }
  }
  std::unique_ptr<PositionTokens> computed = compute(position);
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = cache_[static_cast<size_t>(position)];
  if (!slot) {
    slot = std::move(computed);
  }
  return *slot;
}

// One depth-first walk of the vocabulary trie from `position`, with the stack below unknown.
// Level d holds the cursors after a prefix of d bytes; a subtree whose prefix no cursor survives
// is skipped whole.
std::unique_ptr<PositionTokens> CompiledGrammar::compute(int32_t position) const {
  const TokenVocabulary& vocab = *vocabulary_;
  const auto trie = vocab.trie();
  const auto order = vocab.token_order();
  const size_t levels = static_cast<size_t>(vocab.max_piece_length()) + 1;
  CursorExpander expander(automaton_, {}, kGrammarCursorBudget);
  std::vector<std::vector<Cursor>> reached(levels);   // after d bytes
  std::vector<std::vector<Cursor>> expanded(levels);  // reached[d] through calls and completions
  std::vector<uint8_t> expanded_valid(levels, 0);
  std::vector<uint8_t> dependent_below(levels, 0);  // tokens longer than d may depend on the stack
  std::vector<size_t> arena_mark(levels, 0);
  // The first byte is read by the position itself (its calls and completion are other cursors of
  // the matcher).
  expanded[0].push_back(Cursor{position, kNoFrame, kUnknownStack});
  expanded_valid[0] = 1;

  // Each token sits at one trie node and is reached at most once: its id is listed once. Nothing
  // here is proportional to the vocabulary, which a position allowing a few tokens would pay.
  std::vector<int32_t> accepted;
  std::vector<int32_t> dependent;
  const size_t end = trie.size() - 1;  // the sentinel
  for (size_t i = 0; i < end;) {
    const TokenVocabulary::TrieNode& node = trie[i];
    const size_t depth = node.depth;
    const size_t parent = depth - 1;
    if (!expanded_valid[parent]) {
      expander.truncate_arena(arena_mark[parent - 1]);
      expanded[parent].clear();
      const std::vector<Cursor>& from = reached[parent];
      // Most steps stay inside one rule: a single cursor with nothing to call or complete.
      if (from.size() == 1 && automaton_.calls(from[0].top).empty() && !automaton_.is_final(from[0].top)) {
        expanded[parent].push_back(from[0]);
        dependent_below[parent] = dependent_below[parent - 1];
      } else {
        const CursorExpander::Outcome outcome = expander.expand(from, expanded[parent]);
        if (outcome.over_budget) {
          auto refused = std::make_unique<PositionTokens>();
          refused->too_ambiguous = true;
          return refused;
        }
        dependent_below[parent] = dependent_below[parent - 1] || outcome.popped_unknown;
      }
      expanded_valid[parent] = 1;
      arena_mark[parent] = expander.arena_size();
    } else {
      expander.truncate_arena(arena_mark[parent]);
    }
    reached[depth].clear();
    if (expanded[parent].size() == 1) {
      const Cursor& only = expanded[parent][0];
      const int32_t next = automaton_.next(only.top, node.byte);
      if (next != kNoPosition) {
        reached[depth].push_back(Cursor{next, only.pushed, only.below});
      }
    } else {
      expander.advance(expanded[parent], node.byte, reached[depth]);
    }
    expanded_valid[depth] = 0;
    const uint32_t own_end = trie[i + 1].tokens_begin;
    if (!reached[depth].empty()) {
      accepted.insert(accepted.end(), order.begin() + node.tokens_begin, order.begin() + own_end);
      ++i;
      continue;
    }
    if (dependent_below[parent]) {
      const uint32_t subtree_tokens_end = trie[node.subtree_end].tokens_begin;
      for (uint32_t t = node.tokens_begin; t < subtree_tokens_end; ++t) {
        dependent.push_back(order[t]);
      }
    }
    i = node.subtree_end;
  }

  auto tokens = std::make_unique<PositionTokens>();
  // Ids take 32 bits each, bits one per token: ids win below a 32nd of the vocabulary.
  if (static_cast<int64_t>(accepted.size()) * 32 < vocab.size()) {
    std::sort(accepted.begin(), accepted.end());
    tokens->accepted_ids = std::move(accepted);
  } else {
    tokens->accepted_bits.assign((static_cast<size_t>(vocab.size()) + 63) / 64, 0);
    for (const int32_t id : accepted) {
      tokens->accepted_bits[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    }
  }
  tokens->stack_dependent = std::move(dependent);
  return tokens;
}

Result<std::shared_ptr<const CompiledGrammar>> compile_gbnf(std::string_view gbnf,
                                                            std::shared_ptr<const TokenVocabulary> vocabulary) {
  STATICLM_ASSIGN_OR_RETURN(GrammarAst ast, parse_gbnf(gbnf));
  STATICLM_ASSIGN_OR_RETURN(GrammarAutomaton automaton, GrammarAutomaton::compile(ast));
  return CompiledGrammar::create(std::move(automaton), std::move(vocabulary));
}

}  // namespace staticlm
