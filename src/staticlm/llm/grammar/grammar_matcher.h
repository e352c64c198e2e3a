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

struct GrammarMatcherLimits {
  // A grammar whose text can be parsed in many ways at once (a rule that can match nothing,
  // repeated or inside its own recursion) holds one stack per way, and their number can grow
  // with every byte. Past this many stacks in one step the matcher refuses the step instead of
  // spending time and memory without bound.
  int32_t max_stacks = 4096;
  // Stack nodes pile up as the text goes on; past this many (and twice the count kept by the
  // last compaction) those no stack reaches any more are dropped.
  size_t compact_nodes = size_t{1} << 16;
};

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, GrammarMatcherLimits limits = {});

  // InvalidArgument when the grammar's start alone needs more than max_stacks stacks; such a
  // matcher allows nothing.
  const Status& status() const { return status_; }

  // Sets exactly the tokens whose bytes continue the text within the grammar (mask.size() must
  // be the vocabulary's). End-of-sequence tokens are the caller's: allow them when can_end().
  // Fails with InvalidArgument (and an empty mask) when the grammar is too ambiguous to work them
  // out within kGrammarCursorBudget, or status() is not ok. A token it sets may still need more
  // than max_stacks stacks: accept_token says so.
  Status fill_mask(TokenBitmask& mask);

  // Takes the token's bytes. Fails with InvalidArgument, leaving the matcher unchanged, for an id
  // outside the vocabulary, one the grammar does not allow here, or one whose bytes would need
  // more than max_stacks stacks.
  Status accept_token(int32_t id);
  // Takes raw bytes; false (and unchanged) when the grammar does not allow them here or they
  // need too many stacks (too_ambiguous() then says which).
  bool accept_bytes(std::string_view bytes);
  // Whether accept_bytes would take `bytes`, byte by byte through the automaton (no token sets):
  // the reference the mask tests compare against.
  bool accepts(std::string_view bytes);

  // The text so far is a complete match.
  bool can_end() const { return can_end_; }
  // It is complete and nothing may follow: generation is over.
  bool is_complete() const { return can_end_ && live_.empty(); }
  int64_t bytes_accepted() const { return bytes_accepted_; }
  // The last refused step was refused for needing more than max_stacks stacks.
  bool too_ambiguous() const { return too_ambiguous_; }
  // Stack nodes held, live or not yet compacted away.
  size_t stack_nodes() const { return nodes_.size(); }

  const CompiledGrammar& grammar() const { return *grammar_; }

 private:
  int32_t intern(int32_t position, int32_t parent);
  bool walk(std::string_view bytes, bool commit);
  // Follows calls and completions from `seeds` (node ids) into live_ and can_end_; false when
  // that visits more than limits_.max_stacks nodes.
  bool close_over(std::vector<int32_t>& seeds);
  // Drops the nodes no live stack reaches, renumbering the rest (node ids change).
  void compact();
  Status ambiguity_error() const;
  bool stack_dependent_token_fits(CursorExpander& expander, int32_t node, std::string_view piece);

  std::shared_ptr<const CompiledGrammar> grammar_;
  const GrammarAutomaton& automaton_;
  std::vector<StackNode> nodes_;
  std::unordered_map<uint64_t, int32_t> node_ids_;
  std::vector<int32_t> live_;  // nodes whose position reads bytes
  GrammarMatcherLimits limits_;
  size_t compact_at_;
  Status status_;
  bool too_ambiguous_ = false;
  bool can_end_ = false;
  std::vector<uint32_t> visited_;  // per node: the close_over round that last reached it
  uint32_t round_ = 0;
  int64_t bytes_accepted_ = 0;
  std::vector<int32_t> seeds_;
  std::vector<Cursor> cursors_;
  std::vector<Cursor> next_cursors_;
  std::vector<Cursor> expanded_;
};

}  // namespace staticlm
