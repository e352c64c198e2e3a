// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/grammar/grammar_stack.h"

namespace staticlm {

bool CursorExpander::same(const Cursor& a, const Cursor& b) const {
  if (a.top != b.top || a.below != b.below) {
    return false;
  }
  int32_t x = a.pushed;
  int32_t y = b.pushed;
  while (x != y) {
    if (x == kNoFrame || y == kNoFrame ||
        frames_[static_cast<size_t>(x)].position != frames_[static_cast<size_t>(y)].position) {
      return false;
    }
    x = frames_[static_cast<size_t>(x)].next;
    y = frames_[static_cast<size_t>(y)].next;
  }
  return true;
}

CursorExpander::Outcome CursorExpander::expand(std::span<const Cursor> from, std::vector<Cursor>& out) {
  Outcome outcome;
  work_.assign(from.begin(), from.end());
  seen_.clear();
  while (!work_.empty()) {
    const Cursor cursor = work_.back();
    work_.pop_back();
    bool repeated = false;
    for (const Cursor& other : seen_) {
      if (same(cursor, other)) {
        repeated = true;
        break;
      }
    }
    if (repeated) {
      continue;
    }
    seen_.push_back(cursor);
    const int32_t position = cursor.top;
    if (automaton_.reads_bytes(position)) {
      out.push_back(cursor);
    }
    for (const GrammarCall& call : automaton_.calls(position)) {
      frames_.push_back({call.return_position, cursor.pushed});
      work_.push_back({automaton_.rules()[static_cast<size_t>(call.rule)].start,
                       static_cast<int32_t>(frames_.size() - 1), cursor.below});
    }
    if (automaton_.is_final(position)) {
      if (cursor.pushed != kNoFrame) {
        const ScratchFrame& frame = frames_[static_cast<size_t>(cursor.pushed)];
        work_.push_back({frame.position, frame.next, cursor.below});
      } else if (cursor.below >= 0) {
        const StackNode& node = nodes_[static_cast<size_t>(cursor.below)];
        work_.push_back({node.position, kNoFrame, node.parent});
      } else if (cursor.below == kEmptyStack) {
        outcome.may_end = true;
      } else {
        outcome.popped_unknown = true;
      }
    }
  }
  return outcome;
}

void CursorExpander::advance(std::span<const Cursor> expanded, uint8_t byte, std::vector<Cursor>& out) const {
  const uint8_t cls = automaton_.byte_class(byte);
  const size_t first = out.size();
  for (const Cursor& cursor : expanded) {
    const int32_t next = automaton_.next_in_class(cursor.top, cls);
    if (next == kNoPosition) {
      continue;
    }
    const Cursor moved{next, cursor.pushed, cursor.below};
    bool repeated = false;
    for (size_t i = first; i < out.size(); ++i) {
      if (same(moved, out[i])) {
        repeated = true;
        break;
      }
    }
    if (!repeated) {
      out.push_back(moved);
    }
  }
}

}  // namespace staticlm
