// SPDX-License-Identifier: Apache-2.0
// The state of one constrained generation: where in the grammar the text generated so far has
// led (a set of stacks, shared as nodes), which tokens may come next, and whether the grammar
// may or must end. Cheap to create from a CompiledGrammar; not thread-safe (one per generation).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "staticlm/core/status.h"
#include "staticlm/llm/grammar/compiled_grammar.h"
#include "staticlm/llm/grammar/grammar_stack.h"
#include "staticlm/llm/grammar/token_bitmask.h"

namespace staticlm {

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar);

  // Sets exactly the tokens whose bytes continue the text within the grammar (mask.size() must
  // be the vocabulary's). End-of-sequence tokens are the caller's: allow them when can_end().
  void fill_mask(TokenBitmask& mask);

  // Takes the token's bytes. Fails with InvalidArgument, leaving the matcher unchanged, for an id
  // outside the vocabulary or one the grammar does not allow here.
  Status accept_token(int32_t id);
  // Takes raw bytes; false (and unchanged) when the grammar does not allow them here.
  bool accept_bytes(std::string_view bytes);
  // Whether accept_bytes would take `bytes`, byte by byte through the automaton (no token sets):
  // the reference the mask tests compare against.
  bool accepts(std::string_view bytes);

  // The text so far is a complete match.
  bool can_end() const { return can_end_; }
  // It is complete and nothing may follow: generation is over.
  bool is_complete() const { return can_end_ && live_.empty(); }
  int64_t bytes_accepted() const { return bytes_accepted_; }

  const CompiledGrammar& grammar() const { return *grammar_; }

 private:
  int32_t intern(int32_t position, int32_t parent);
  bool walk(std::string_view bytes, bool commit);
  // Follows calls and completions from `seeds` (node ids) into live_ and can_end_.
  void close_over(std::vector<int32_t>& seeds);
  bool stack_dependent_token_fits(CursorExpander& expander, int32_t node, std::string_view piece);

  std::shared_ptr<const CompiledGrammar> grammar_;
  const GrammarAutomaton& automaton_;
  std::vector<StackNode> nodes_;
  std::unordered_map<uint64_t, int32_t> node_ids_;
  std::vector<int32_t> live_;  // nodes whose position reads bytes
  bool can_end_ = false;
  int64_t bytes_accepted_ = 0;
  std::vector<int32_t> seeds_;
  std::vector<Cursor> cursors_;
  std::vector<Cursor> next_cursors_;
  std::vector<Cursor> expanded_;
};

}  // namespace staticlm
