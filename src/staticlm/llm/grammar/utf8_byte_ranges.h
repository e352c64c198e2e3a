// SPDX-License-Identifier: Apache-2.0
// Code point ranges as UTF-8 byte sequences: [U+0080, U+07FF] is the one sequence
// [C2-DF][80-BF]. The grammar compiler turns character classes into byte automata with them.
#pragma once

#include <cstdint>
#include <vector>

#include "staticlm/llm/grammar/grammar_ast.h"

namespace staticlm {

struct ByteRange {
  uint8_t first = 0;
  uint8_t last = 0;
};

// Byte-range sequences whose byte strings are exactly the UTF-8 encodings of `ranges` (normalized,
// without surrogates); each sequence is 1 to 4 ranges long.
std::vector<std::vector<ByteRange>> utf8_byte_sequences(const std::vector<CodePointRange>& ranges);

}  // namespace staticlm
