// SPDX-License-Identifier: Apache-2.0
// Exploring the pushdown automaton without changing the matcher: a cursor is a stack of
// positions whose top is `top`, whose frames pushed during the exploration live in a scratch
// arena, and below which lies the matcher's real stack (a node) or, when a position's tokens are
// precomputed, a stack nobody knows yet. expand() follows calls and rule completions from a set
// of cursors to those that read the next byte.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "staticlm/llm/grammar/grammar_automaton.h"

namespace staticlm {

// A frame of a matcher's stack: a position and the node below it (kEmptyStack at the bottom).
struct StackNode {
  int32_t position = 0;
  int32_t parent = 0;
};

inline constexpr int32_t kEmptyStack = -1;
inline constexpr int32_t kUnknownStack = -2;
inline constexpr int32_t kNoFrame = -1;

struct Cursor {
  int32_t top = 0;
  int32_t pushed = kNoFrame;  // scratch frames above `below`
  int32_t below = kEmptyStack;
};

struct ScratchFrame {
  int32_t position = 0;
  int32_t next = kNoFrame;
};

class CursorExpander {
 public:
  struct Outcome {
    bool may_end = false;         // the whole stack completed: the grammar may end here
    bool popped_unknown = false;  // a rule completed into the stack nobody knows
  };

  CursorExpander(const GrammarAutomaton& automaton, std::span<const StackNode> nodes)
      : automaton_(automaton), nodes_(nodes) {}

  // Appends to `out` every cursor reachable from `from` through calls and completions whose top
  // reads bytes (each once).
  Outcome expand(std::span<const Cursor> from, std::vector<Cursor>& out);

  // The cursors after `byte` from already expanded cursors (appended to `out`, duplicates removed).
  void advance(std::span<const Cursor> expanded, uint8_t byte, std::vector<Cursor>& out) const;

  size_t arena_size() const { return frames_.size(); }
  void truncate_arena(size_t size) { frames_.resize(size); }

  bool same(const Cursor& a, const Cursor& b) const;

 private:
  const GrammarAutomaton& automaton_;
  std::span<const StackNode> nodes_;
  std::vector<ScratchFrame> frames_;
  std::vector<Cursor> work_;
  std::vector<Cursor> seen_;
};

}  // namespace staticlm
