// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/grammar/grammar_spec.h"

#include "staticlm/llm/grammar/grammar_matcher.h"
#include "staticlm/llm/grammar/json_schema_grammar.h"

namespace staticlm {

namespace {

Result<std::shared_ptr<const CompiledGrammar>> compile(const GrammarSpec& spec,
                                                       std::shared_ptr<const TokenVocabulary> vocabulary) {
  switch (spec.kind) {
    case GrammarSpec::Kind::kGbnf: return compile_gbnf(spec.text, std::move(vocabulary));
    case GrammarSpec::Kind::kJsonObject: return compile_gbnf(any_json_object_gbnf(), std::move(vocabulary));
    case GrammarSpec::Kind::kJsonSchema: {
      STATICLM_ASSIGN_OR_RETURN(const std::string gbnf, json_schema_to_gbnf(std::string_view(spec.text)));
      return compile_gbnf(gbnf, std::move(vocabulary));
    }
  }
  return internal_error("unknown grammar kind");
}

}  // namespace

Result<std::shared_ptr<const CompiledGrammar>> compile_grammar_spec(const GrammarSpec& spec,
                                                                    std::shared_ptr<const TokenVocabulary> vocabulary) {
  STATICLM_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledGrammar> grammar, compile(spec, std::move(vocabulary)));
  // The first token's mask, worked out now (and kept for every generation), refuses a grammar too
  // ambiguous to start before any output is promised.
  GrammarMatcher start(grammar);
  TokenBitmask mask(grammar->vocabulary().size());
  STATICLM_RETURN_IF_ERROR(start.fill_mask(mask));
  return grammar;
}

}  // namespace staticlm
