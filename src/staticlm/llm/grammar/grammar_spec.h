// SPDX-License-Identifier: Apache-2.0
// What a caller asks to constrain a generation with, before it is compiled against a tokenizer:
// GBNF text, a JSON Schema (as JSON text), or any JSON object. The CLI's --grammar / --json-schema
// / --json, Python's GenerationConfig and the server's response_format, grammar and json_schema
// fields all become one of these; Engine::compile_grammar compiles it.
#pragma once

#include <memory>
#include <string>

#include "staticlm/core/result.h"
#include "staticlm/llm/grammar/compiled_grammar.h"

namespace staticlm {

struct GrammarSpec {
  enum class Kind { kGbnf, kJsonSchema, kJsonObject };
  Kind kind = Kind::kGbnf;
  std::string text;  // the GBNF or the schema's JSON; empty for kJsonObject

  bool operator==(const GrammarSpec&) const = default;
};

// Compiles `spec` against `vocabulary` and works out the tokens it allows first:
// json_schema_to_gbnf's and compile_gbnf's errors, and GrammarMatcher's for a grammar too
// ambiguous to follow from its start.
Result<std::shared_ptr<const CompiledGrammar>> compile_grammar_spec(const GrammarSpec& spec,
                                                                    std::shared_ptr<const TokenVocabulary> vocabulary);

}  // namespace staticlm
