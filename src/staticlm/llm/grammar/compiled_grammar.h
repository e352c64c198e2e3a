// SPDX-License-Identifier: Apache-2.0
// A grammar compiled against one tokenizer's vocabulary: the byte automaton plus, for each
// position, the tokens it allows, computed on first use by one walk of the vocabulary trie and
// kept for every later step and request. A token is settled at its position when all its bytes
// stay inside the position's rule (and the rules it calls): accepted or rejected whatever lies
// below on the stack. Only tokens that complete the position's rule part-way ("},", "\",")
// depend on the stack and are checked by the matcher against its real stack.
//
// Immutable apart from that cache, which is guarded: one CompiledGrammar serves any number of
// GrammarMatchers on any threads.
#pragma once

#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/llm/grammar/grammar_automaton.h"
#include "staticlm/llm/grammar/token_bitmask.h"
#include "staticlm/llm/grammar/token_vocabulary.h"

namespace staticlm {

// The tokens of one position whose first byte the position itself reads.
struct PositionTokens {
  // Accepted whatever the stack: as bits when many, as ids when few.
  std::vector<uint64_t> accepted_bits;
  std::vector<int32_t> accepted_ids;
  // Depend on what is below the position's rule on the stack.
  std::vector<int32_t> stack_dependent;
  // Working them out took more than kGrammarCursorBudget cursors; the lists are incomplete.
  bool too_ambiguous = false;
};

// How many cursors (grammar_stack.h) working out one position's tokens, or checking one mask's
// stack-dependent tokens, may visit. A grammar that parses a text in many ways at once multiplies
// them with every byte of a token; past this the grammar is refused as too ambiguous.
inline constexpr int64_t kGrammarCursorBudget = int64_t{1} << 18;

class CompiledGrammar {
 public:
  static std::shared_ptr<const CompiledGrammar> create(GrammarAutomaton automaton,
                                                       std::shared_ptr<const TokenVocabulary> vocabulary);

  const GrammarAutomaton& automaton() const { return automaton_; }
  const TokenVocabulary& vocabulary() const { return *vocabulary_; }

  // Thread-safe; computed on the first call for `position`, which must read bytes.
  const PositionTokens& position_tokens(int32_t position) const;

 private:
  CompiledGrammar(GrammarAutomaton automaton, std::shared_ptr<const TokenVocabulary> vocabulary);
  std::unique_ptr<PositionTokens> compute(int32_t position) const;

  GrammarAutomaton automaton_;
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<const PositionTokens>> cache_;
};

// GBNF text (gbnf_parser.h) compiled against `vocabulary`; the parser's and the automaton
// compiler's errors.
Result<std::shared_ptr<const CompiledGrammar>> compile_gbnf(std::string_view gbnf,
                                                            std::shared_ptr<const TokenVocabulary> vocabulary);

}  // namespace staticlm
