// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/grammar/grammar_stack.h"

#include <algorithm>

namespace staticlm {

namespace {

uint64_t pack(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

size_t hash_cursor(const Cursor& cursor) {
  uint64_t h = pack(cursor.top, cursor.pushed) * 0x9e3779b97f4a7c15ULL;
  h ^= static_cast<uint32_t>(cursor.below) + (h >> 29);
  return static_cast<size_t>(h * 0xbf58476d1ce4e5b9ULL >> 20);
}

bool same(const Cursor& a, const Cursor& b) {
  return a.top == b.top && a.pushed == b.pushed && a.below == b.below;
}

}  // namespace

void CursorSet::clear() {
  size_ = 0;
  if (++round_ == 0) {
    for (Slot& slot : slots_) {
      slot.round = 0;
    }
    round_ = 1;
  }
}

bool CursorSet::insert(const Cursor& cursor) {
  if (2 * (size_ + 1) > slots_.size()) {
    grow();
  }
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash_cursor(cursor) & mask;; i = (i + 1) & mask) {
    Slot& slot = slots_[i];
    if (slot.round != round_) {
      slot = {cursor, round_};
      ++size_;
      return true;
    }
    if (same(slot.cursor, cursor)) {
      return false;
    }
  }
}

void CursorSet::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 64 : 2 * old.size(), Slot{});
  const uint32_t round = round_;
  round_ = 1;
  size_ = 0;
  for (const Slot& slot : old) {
    if (slot.round == round) {
      insert(slot.cursor);
    }
  }
}

int32_t CursorExpander::push_frame(int32_t position, int32_t next) {
  auto [it, inserted] = frame_ids_.emplace(pack(position, next), static_cast<int32_t>(frames_.size()));
  if (inserted) {
    frames_.push_back({position, next});
  }
  return it->second;
}

void CursorExpander::truncate_arena(size_t size) {
  for (size_t id = size; id < frames_.size(); ++id) {
    frame_ids_.erase(pack(frames_[id].position, frames_[id].next));
  }
  frames_.resize(std::min(size, frames_.size()));
}

CursorExpander::Outcome CursorExpander::expand(std::span<const Cursor> from, std::vector<Cursor>& out) {
  Outcome outcome;
  work_.assign(from.begin(), from.end());
  seen_.clear();
  while (!work_.empty()) {
    const Cursor cursor = work_.back();
    work_.pop_back();
    if (!seen_.insert(cursor)) {
      continue;
    }
    if (--budget_ < 0) {
      work_.clear();
      outcome.over_budget = true;
      return outcome;
    }
    const int32_t position = cursor.top;
    if (automaton_.reads_bytes(position)) {
      out.push_back(cursor);
    }
    for (const GrammarCall& call : automaton_.calls(position)) {
      work_.push_back({automaton_.rules()[static_cast<size_t>(call.rule)].start,
                       push_frame(call.return_position, cursor.pushed), cursor.below});
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

void CursorExpander::advance(std::span<const Cursor> expanded, uint8_t byte, std::vector<Cursor>& out) {
  const uint8_t cls = automaton_.byte_class(byte);
  seen_.clear();
  for (const Cursor& cursor : expanded) {
    const int32_t next = automaton_.next_in_class(cursor.top, cls);
    if (next == kNoPosition) {
      continue;
    }
    const Cursor moved{next, cursor.pushed, cursor.below};
    if (seen_.insert(moved)) {
      out.push_back(moved);
    }
  }
}

}  // namespace staticlm
