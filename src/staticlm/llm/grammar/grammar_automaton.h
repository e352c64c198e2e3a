// SPDX-License-Identifier: Apache-2.0
// A grammar compiled to byte automata: one deterministic automaton per rule that is still called
// (the root, recursive rules, rules too large to copy), every other rule copied into its callers.
// A position is a state of one rule's automaton; from it a byte leads to at most one position of
// the same rule, a call enters another rule and continues at its return position once that rule
// completes, and a final position may complete its rule. Positions are numbered across rules.
//
// Compiling keeps only positions from which the rule can still complete, so every prefix the
// automaton accepts can be finished, and refuses left recursion (a rule that can reach itself
// without reading a byte), which a pushdown matcher cannot run.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/llm/grammar/grammar_ast.h"

namespace staticlm {

struct GrammarCompileLimits {
  int64_t max_positions = 250000;    // automaton states, all rules together
  int64_t max_nfa_states = 4000000;  // before determinization
  // NFA states in all the subsets determinization works out, repeats included: its time and memory
  // (a long run of optional items makes every subset long).
  int64_t max_subset_states = int64_t{1} << 24;
  int64_t inline_rule_states = 8192;  // a rule up to this size is copied into its callers
};

inline constexpr int32_t kNoPosition = -1;

struct GrammarCall {
  int32_t rule = 0;             // index into GrammarAutomaton's rules
  int32_t return_position = 0;  // where the caller goes on once the rule completes
};

class GrammarAutomaton {
 public:
  struct Rule {
    std::string name;
    int32_t start = 0;
  };

  // Compiles `ast`. Fails with InvalidArgument for left recursion (naming the rules), a grammar
  // that matches no text, or more states than the limits allow.
  static Result<GrammarAutomaton> compile(const GrammarAst& ast, const GrammarCompileLimits& limits = {});

  int32_t num_positions() const { return static_cast<int32_t>(final_.size()); }
  int32_t root_start() const { return rules_[root_].start; }
  int32_t root_rule() const { return root_; }
  const std::vector<Rule>& rules() const { return rules_; }

  // The next position after `byte`, or kNoPosition.
  int32_t next(int32_t position, uint8_t byte) const {
    return transitions_[static_cast<size_t>(position) * num_classes_ + byte_class_[byte]];
  }
  // Bytes in one class lead everywhere to the same place.
  uint8_t byte_class(uint8_t byte) const { return byte_class_[byte]; }
  int32_t next_in_class(int32_t position, uint8_t byte_class) const {
    return transitions_[static_cast<size_t>(position) * num_classes_ + byte_class];
  }
  int32_t num_byte_classes() const { return static_cast<int32_t>(num_classes_); }

  bool is_final(int32_t position) const { return final_[position] != 0; }
  // Whether some byte leads on from `position`.
  bool reads_bytes(int32_t position) const { return reads_bytes_[position] != 0; }
  std::span<const GrammarCall> calls(int32_t position) const {
    return std::span<const GrammarCall>(calls_.data() + call_begin_[position],
                                        call_begin_[position + 1] - call_begin_[position]);
  }
  int32_t rule_of(int32_t position) const { return rule_of_[position]; }

 private:
  friend class GrammarAutomatonBuilder;

  std::vector<Rule> rules_;
  int32_t root_ = 0;
  std::array<uint8_t, 256> byte_class_{};
  size_t num_classes_ = 1;
  std::vector<int32_t> transitions_;  // num_positions x num_classes
  std::vector<uint8_t> final_;
  std::vector<uint8_t> reads_bytes_;
  std::vector<int32_t> rule_of_;
  std::vector<uint32_t> call_begin_;  // num_positions + 1 offsets into calls_
  std::vector<GrammarCall> calls_;
};

}  // namespace staticlm
