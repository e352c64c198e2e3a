// SPDX-License-Identifier: Apache-2.0
// A parsed grammar: named rules whose bodies are expressions over Unicode code points (literals,
// character classes, references to rules, sequences, alternatives, bounded repetition). The GBNF
// parser produces it and the grammar compiler turns it into byte automata; nothing here knows
// about tokens.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace staticlm {

// An inclusive range of code points, never containing a surrogate (U+D800..U+DFFF).
struct CodePointRange {
  char32_t first = 0;
  char32_t last = 0;
};

inline constexpr char32_t kMaxCodePoint = 0x10FFFF;
inline constexpr uint32_t kUnboundedRepeat = std::numeric_limits<uint32_t>::max();

struct GrammarExpr {
  enum class Kind : uint8_t {
    kSequence,     // children in order; no children: the empty string
    kAlternation,  // any one child
    kLiteral,      // `text`, code point by code point
    kCharClass,    // one code point in `ranges`
    kRuleRef,      // the rule `rule`
    kRepeat,       // children[0] between min_repeat and max_repeat times
  };
  Kind kind = Kind::kSequence;
  std::vector<GrammarExpr> children;
  std::u32string text;
  std::vector<CodePointRange> ranges;  // sorted, disjoint, not adjacent, surrogates removed
  uint32_t rule = 0;
  uint32_t min_repeat = 0;
  uint32_t max_repeat = 0;  // kUnboundedRepeat: no upper bound
};

struct GrammarRule {
  std::string name;
  GrammarExpr body;
};

struct GrammarAst {
  std::vector<GrammarRule> rules;
  uint32_t root = 0;
};

// Sorts and merges `ranges`, and removes the surrogate block, so that equal sets compare equal.
std::vector<CodePointRange> normalize_ranges(std::vector<CodePointRange> ranges);
// Every code point (surrogates excluded) that is not in `ranges` (which must be normalized).
std::vector<CodePointRange> complement_ranges(const std::vector<CodePointRange>& ranges);

}  // namespace staticlm
