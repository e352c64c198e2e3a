// SPDX-License-Identifier: Apache-2.0
// Exploring the pushdown automaton without changing the matcher: a cursor is a stack of
// positions whose top is `top`, whose frames pushed during the exploration live in a scratch
// arena, and below which lies the matcher's real stack (a node) or, when a position's tokens are
// precomputed, a stack nobody knows yet. expand() follows calls and rule completions from a set
// of cursors to those that read the next byte.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
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

// A set of cursors, cleared in constant time; frames are interned, so equal cursors are equal
// field by field.
class CursorSet {
 public:
  void clear();
  // False when `cursor` was already in the set.
  bool insert(const Cursor& cursor);

 private:
  struct Slot {
    Cursor cursor;
    uint32_t round = 0;
  };
  void grow();
  std::vector<Slot> slots_;
  size_t size_ = 0;
  uint32_t round_ = 1;
};

class CursorExpander {
 public:
  struct Outcome {
    bool may_end = false;         // the whole stack completed: the grammar may end here
    bool popped_unknown = false;  // a rule completed into the stack nobody knows
    // The budget ran out: what was appended is incomplete. A grammar that parses a text in many
    // ways at once multiplies the cursors with every byte; the budget bounds the time spent.
    bool over_budget = false;
  };

  // `budget`: how many cursors all expand() calls together may visit.
  CursorExpander(const GrammarAutomaton& automaton, std::span<const StackNode> nodes, int64_t budget)
      : automaton_(automaton), nodes_(nodes), budget_(budget) {}

  // Appends to `out` every cursor reachable from `from` through calls and completions whose top
  // reads bytes (each once).
  Outcome expand(std::span<const Cursor> from, std::vector<Cursor>& out);

  // The cursors after `byte` from already expanded cursors (appended to `out`, duplicates removed).
  void advance(std::span<const Cursor> expanded, uint8_t byte, std::vector<Cursor>& out);

  size_t arena_size() const { return frames_.size(); }
  // Below zero once an expand() ran out of budget.
  int64_t budget_left() const { return budget_; }
  // Drops the frames pushed since the arena had `size` (cursors that use them are then invalid).
  void truncate_arena(size_t size);

 private:
  int32_t push_frame(int32_t position, int32_t next);

  const GrammarAutomaton& automaton_;
  std::span<const StackNode> nodes_;
  int64_t budget_;
  std::vector<ScratchFrame> frames_;
  std::unordered_map<uint64_t, int32_t> frame_ids_;
  std::vector<Cursor> work_;
  CursorSet seen_;
};

}  // namespace staticlm
