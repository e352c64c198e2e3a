// SPDX-License-Identifier: Apache-2.0
// libFuzzer: GBNF text as a user or a request brings it. Parsing and compiling must refuse what
// is malformed or too large with a Status; a grammar they accept must run a matcher over bytes
// and give token masks without crashing.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/llm/grammar/compiled_grammar.h"
#include "staticlm/llm/grammar/gbnf_parser.h"
#include "staticlm/llm/grammar/grammar_matcher.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace staticlm;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  GbnfLimits limits;
  limits.max_repeat = 200;
  auto ast = parse_gbnf(text, "root", limits);
  if (!ast.ok()) {
    return 0;
  }
  GrammarCompileLimits compile_limits;
  compile_limits.max_positions = 5000;
  compile_limits.max_nfa_states = 50000;
  compile_limits.max_subset_states = 1 << 20;
  auto automaton = GrammarAutomaton::compile(*ast, compile_limits);
  if (!automaton.ok()) {
    return 0;
  }
  static const auto vocabulary = [] {
    std::vector<std::string> pieces;
    for (int b = 0; b < 256; ++b) {
      pieces.push_back(std::string(1, static_cast<char>(b)));
    }
    for (const char* piece : {"ab", "{\"", "\",", "},", "12", "\xc3\xa9", "\xe6\x97", "  ", "true"}) {
      pieces.push_back(piece);
    }
    return TokenVocabulary::from_pieces(std::move(pieces));
  }();
  auto grammar = CompiledGrammar::create(std::move(automaton).value(), vocabulary);
  GrammarMatcher matcher(grammar);
  TokenBitmask mask(vocabulary->size());
  for (int step = 0; step < 8 && !matcher.is_complete(); ++step) {
    if (!matcher.fill_mask(mask).ok()) {
      break;
    }
    int32_t chosen = -1;
    for (int32_t id = vocabulary->size() - 1; id >= 0; --id) {
      if (mask.test(id)) {
        chosen = id;
        break;
      }
    }
    if (chosen < 0 || !matcher.accept_token(chosen).ok()) {
      break;
    }
  }
  return 0;
}
