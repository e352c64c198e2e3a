// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/grammar/grammar_matcher.h"

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/llm/grammar/gbnf_parser.h"
#include "staticlm/llm/grammar/grammar_spec.h"
#include "staticlm/llm/grammar/grammar_test_util.h"
#include "staticlm/llm/tokenizer/tokenizer.h"
#include "staticlm/llm/tokenizer/tokenizer_test_util.h"

namespace staticlm {
namespace {

using testing::byte_vocabulary;

std::shared_ptr<const CompiledGrammar> compile_ok(std::string_view gbnf,
                                                  std::shared_ptr<const TokenVocabulary> vocab = byte_vocabulary()) {
  Result<std::shared_ptr<const CompiledGrammar>> grammar = compile_gbnf(gbnf, std::move(vocab));
  EXPECT_TRUE(grammar.ok()) << grammar.status().to_string() << "\n" << gbnf;
  return grammar.ok() ? *grammar : nullptr;
}

bool full_match(const std::shared_ptr<const CompiledGrammar>& grammar, std::string_view text) {
  GrammarMatcher matcher(grammar);
  return matcher.accept_bytes(text) && matcher.can_end();
}

bool prefix_match(const std::shared_ptr<const CompiledGrammar>& grammar, std::string_view text) {
  GrammarMatcher matcher(grammar);
  return matcher.accept_bytes(text);
}

struct MatchCase {
  const char* grammar;
  std::vector<std::string> matches;
  std::vector<std::string> non_matches;
};

TEST(GrammarMatcher, MatchesExactlyTheGrammarsLanguage) {
  const MatchCase cases[] = {
      {"root ::= \"ab\" | \"a\" \"c\"*", {"ab", "a", "acc"}, {"", "b", "abc", "aab"}},
      {"root ::= [a-c]{2,3}", {"ab", "abc", "ccc"}, {"a", "abca", "ad"}},
      {"root ::= [^a-z\\n]+", {"A", "1!", "\xc3\xa9", "\xf0\x9f\x98\x80"}, {"", "a", "A\n", "\xc3", "\xed\xa0\x80"}},
      {"root ::= \"x\" item{0,2} \"y\"\nitem ::= \"[\" [0-9] \"]\"",
       {"xy", "x[1]y", "x[1][2]y"},
       {"x[1][2][3]y", "x[]y"}},
      {"root ::= expr\nexpr ::= term ((\"+\" | \"-\") term)*\nterm ::= [0-9]+ | \"(\" expr \")\"",
       {"1", "1+2", "(1-2)+3", "((4))"},
       {"(1", "1+", "()", "+1"}},
      {"root ::= list\nlist ::= \"[\" (list (\",\" list)*)? \"]\"", {"[]", "[[]]", "[[],[[]]]"}, {"[", "[[]", "[],[]"}},
      {"root ::= a b\na ::= \"x\"?\nb ::= \"y\"?", {"", "x", "y", "xy"}, {"yx", "xx"}},
      {"root ::= . . \"!\"", {"ab!", "\xe6\x97\xa5\xe6\x9c\xac!", "\n\t!"}, {"a!", "abc!"}},
      {"root ::= \"\\u00e9\" [\\u3041-\\u309f]", {"\xc3\xa9\xe3\x81\x81"}, {"\xc3\xa9\xe3\x81\x80", "e"}},
  };
  for (const MatchCase& c : cases) {
    auto grammar = compile_ok(c.grammar);
    ASSERT_NE(grammar, nullptr);
    for (const std::string& text : c.matches) {
      EXPECT_TRUE(full_match(grammar, text)) << c.grammar << " should match '" << text << "'";
    }
    for (const std::string& text : c.non_matches) {
      EXPECT_FALSE(full_match(grammar, text)) << c.grammar << " should not match '" << text << "'";
    }
  }
}

TEST(GrammarMatcher, AcceptsOnlyPrefixesThatCanStillComplete) {
  auto grammar = compile_ok("root ::= \"ab\" | \"x\" dead\ndead ::= \"y\" dead");
  ASSERT_TRUE(grammar);
  EXPECT_TRUE(prefix_match(grammar, "a"));
  EXPECT_FALSE(prefix_match(grammar, "x"));  // `dead` never completes, so "x" leads nowhere
  auto partial_utf8 = compile_ok("root ::= \"\xe6\x97\xa5\"");
  EXPECT_TRUE(prefix_match(partial_utf8, "\xe6"));
  EXPECT_TRUE(prefix_match(partial_utf8, "\xe6\x97"));
  EXPECT_FALSE(prefix_match(partial_utf8, "\xe6\x98"));
}

TEST(GrammarMatcher, CompletionAndEnd) {
  auto grammar = compile_ok("root ::= \"a\" [0-9]*");
  GrammarMatcher matcher(grammar);
  EXPECT_FALSE(matcher.can_end());
  ASSERT_TRUE(matcher.accept_bytes("a1"));
  EXPECT_TRUE(matcher.can_end());
  EXPECT_FALSE(matcher.is_complete());  // more digits may follow
  auto fixed = compile_ok("root ::= \"ok\"");
  GrammarMatcher done(fixed);
  ASSERT_TRUE(done.accept_bytes("ok"));
  EXPECT_TRUE(done.is_complete());
  EXPECT_FALSE(done.accept_bytes("k"));
  EXPECT_TRUE(done.is_complete());  // a refused input changes nothing
  EXPECT_FALSE(done.accept_token(static_cast<int32_t>('x')).ok());
  EXPECT_FALSE(done.accept_token(300).ok());
}

TEST(GrammarMatcher, RefusesLeftRecursionAndEmptyLanguages) {
  Result<GrammarAst> left = parse_gbnf("root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"");
  ASSERT_TRUE(left.ok());
  Result<GrammarAutomaton> automaton = GrammarAutomaton::compile(*left);
  ASSERT_FALSE(automaton.ok());
  EXPECT_NE(automaton.status().message().find("'expr' is left-recursive"), std::string::npos)
      << automaton.status().message();
  // Through a rule that can match nothing, too.
  Result<GrammarAst> hidden = parse_gbnf("root ::= a\na ::= b a \"x\" | \"y\"\nb ::= \"z\"?");
  ASSERT_TRUE(hidden.ok());
  EXPECT_FALSE(GrammarAutomaton::compile(*hidden).ok());
  Result<GrammarAst> endless = parse_gbnf("root ::= \"a\" root");
  ASSERT_TRUE(endless.ok());
  Result<GrammarAutomaton> none = GrammarAutomaton::compile(*endless);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("matches no finite text"), std::string::npos);
  Result<GrammarAst> huge = parse_gbnf("root ::= ([a-z] [0-9]){5000} ([a-z] [0-9]){5000}");
  ASSERT_TRUE(huge.ok());
  GrammarCompileLimits limits;
  limits.max_positions = 1000;
  EXPECT_FALSE(GrammarAutomaton::compile(*huge, limits).ok());
  // A long run of optional items: every subset the determinization builds holds the rest of the
  // run, so its work grows with the square of the run before any state limit is reached.
  Result<GrammarAst> optional = parse_gbnf("root ::= (\"ab\"? \"c\"?){2000}{50}");
  ASSERT_TRUE(optional.ok());
  Result<GrammarAutomaton> slow = GrammarAutomaton::compile(*optional);
  ASSERT_FALSE(slow.ok());
  EXPECT_NE(slow.status().message().find("rule 'root' needs more than 16777216 states in its automaton's subsets"),
            std::string::npos)
      << slow.status().message();
}

// Each letter can be taken by any of the four copies of `tail` (the others matching nothing), at
// every depth of the recursion: the ways to parse a text multiply with each letter.
constexpr const char* kAmbiguous = "root ::= tail{1,4}\ntail ::= [a-z] root | \"\"";

TEST(GrammarMatcher, RefusesAStepThatNeedsTooManyStacks) {
  auto grammar = compile_ok(kAmbiguous);
  ASSERT_TRUE(grammar);
  GrammarMatcherLimits limits;
  limits.max_stacks = 300;
  GrammarMatcher matcher(grammar, limits);
  ASSERT_TRUE(matcher.status().ok());
  int taken = 0;
  while (taken < 64 && matcher.accept_bytes("a")) {
    ++taken;
  }
  ASSERT_LT(taken, 64) << "the stacks should have outgrown the limit";
  EXPECT_GE(taken, 1);
  EXPECT_TRUE(matcher.too_ambiguous());
  EXPECT_EQ(matcher.bytes_accepted(), taken);
  EXPECT_TRUE(matcher.can_end()) << "a refused step changes nothing";
  const Status refused = matcher.accept_token(static_cast<int32_t>('a'));
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("more than 300 stacks"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("too ambiguous"), std::string::npos) << refused.message();
  // Another byte the grammar refuses is an ordinary refusal.
  EXPECT_FALSE(matcher.accept_bytes("!"));
  EXPECT_FALSE(matcher.too_ambiguous());
  EXPECT_NE(matcher.accept_token(static_cast<int32_t>('!')).message().find("is not allowed"), std::string::npos);

  // One way to parse, however deep: never refused for ambiguity.
  auto nested = compile_ok("root ::= \"(\" root \")\" | \"x\"");
  GrammarMatcher deep(nested, limits);
  const std::string text = std::string(3000, '(') + "x" + std::string(3000, ')');
  EXPECT_TRUE(deep.accept_bytes(text));
  EXPECT_TRUE(deep.is_complete());
}

TEST(GrammarMatcher, AGrammarWhoseStartNeedsTooManyStacksAllowsNothing) {
  auto grammar = compile_ok(kAmbiguous);
  ASSERT_TRUE(grammar);
  GrammarMatcherLimits limits;
  limits.max_stacks = 3;
  GrammarMatcher matcher(grammar, limits);
  EXPECT_EQ(matcher.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(matcher.status().message().find("too ambiguous"), std::string::npos) << matcher.status().message();
  TokenBitmask mask(256);
  EXPECT_EQ(matcher.fill_mask(mask).message(), matcher.status().message());
  EXPECT_FALSE(mask.any());
  EXPECT_FALSE(matcher.can_end());
  EXPECT_EQ(matcher.accept_token(static_cast<int32_t>('a')).message(), matcher.status().message());
  EXPECT_TRUE(GrammarMatcher(grammar).status().ok());
}

// A long token explores every way to parse its bytes at once: with the ways multiplying per letter
// the work is bounded, and the grammar refused, instead of the mask taking forever.
TEST(GrammarMatcher, RefusesAGrammarTooAmbiguousToWorkOutItsTokens) {
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) {
    pieces.push_back(std::string(1, static_cast<char>(b)));
  }
  pieces.push_back("abcdefghijklmnopqrstuvwxyz");
  auto vocabulary = TokenVocabulary::from_pieces(std::move(pieces));
  GrammarSpec spec;
  spec.text = kAmbiguous;
  Result<std::shared_ptr<const CompiledGrammar>> refused = compile_grammar_spec(spec, vocabulary);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("too ambiguous"), std::string::npos) << refused.status().message();
  // Compiled without that check, the matcher's mask says the same.
  auto grammar = compile_ok(kAmbiguous, vocabulary);
  ASSERT_TRUE(grammar);
  GrammarMatcher matcher(grammar);
  TokenBitmask mask(vocabulary->size());
  const Status filled = matcher.fill_mask(mask);
  EXPECT_NE(filled.message().find("too ambiguous"), std::string::npos) << filled.message();
  EXPECT_FALSE(mask.any());
  // Single bytes only: the same grammar is followed until its stacks outgrow the limit.
  spec.text = "root ::= [a-z] tail{1,4}\ntail ::= [a-z] root | \"\"";
  EXPECT_TRUE(compile_grammar_spec(spec, byte_vocabulary()).ok());
}

// Dropping the nodes no stack reaches renumbers the rest: a matcher compacting after every few
// nodes must walk exactly as one that never does.
TEST(GrammarMatcher, CompactingItsStacksChangesNothing) {
  const char* grammars[] = {"root ::= list\nlist ::= \"[\" (list (\",\" list)*)? \"]\"", kAmbiguous,
                            "root ::= expr\nexpr ::= term ((\"+\" | \"-\") term)*\nterm ::= [0-9]+ | \"(\" expr \")\""};
  const std::string alphabets[] = {"[],", "ab!", "(()+-12"};
  std::mt19937 random(7);
  for (size_t g = 0; g < std::size(grammars); ++g) {
    auto grammar = compile_ok(grammars[g]);
    ASSERT_TRUE(grammar);
    GrammarMatcherLimits often;
    often.max_stacks = 2000;
    often.compact_nodes = 8;
    GrammarMatcherLimits never = often;
    never.compact_nodes = size_t{1} << 40;
    for (int round = 0; round < 20; ++round) {
      GrammarMatcher compacting(grammar, often);
      GrammarMatcher keeping(grammar, never);
      for (int i = 0; i < 300; ++i) {
        const std::string byte(1, alphabets[g][random() % alphabets[g].size()]);
        const bool taken = compacting.accept_bytes(byte);
        ASSERT_EQ(taken, keeping.accept_bytes(byte)) << grammars[g] << " at byte " << i;
        ASSERT_EQ(compacting.too_ambiguous(), keeping.too_ambiguous());
        ASSERT_EQ(compacting.can_end(), keeping.can_end());
        ASSERT_EQ(compacting.is_complete(), keeping.is_complete());
        TokenBitmask a(256);
        TokenBitmask b(256);
        ASSERT_EQ(compacting.fill_mask(a).ok(), keeping.fill_mask(b).ok());
        ASSERT_TRUE(std::equal(a.words().begin(), a.words().end(), b.words().begin()))
            << grammars[g] << " at byte " << i;
      }
      EXPECT_LE(compacting.stack_nodes(), keeping.stack_nodes());
    }
  }
}

// --- Token masks against a brute-force reference, on real tokenizers ----------------------------

std::unique_ptr<Tokenizer> load_fixture_tokenizer(std::string_view name) {
  using tokenizer_test::read_file;
  using tokenizer_test::read_gzip_file;
  Result<std::unique_ptr<Tokenizer>> tokenizer = [&]() -> Result<std::unique_ptr<Tokenizer>> {
    if (name == "kjv") {
      return load_tokenizer_from_dir(std::string(STATICLM_SOURCE_DIR) + "/models/kjv-llama-6m");
    }
    const std::string json = read_gzip_file(tokenizer_test::fixture_path(std::string(name) + ".tokenizer.json.gz"));
    const std::string config = read_file(tokenizer_test::fixture_path(std::string(name) + ".tokenizer_config.json"));
    return load_tokenizer_json(json, config);
  }();
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
  return tokenizer.ok() ? std::move(tokenizer).value() : nullptr;
}

// What the reference sees of a token: its bytes decoded after the text so far (the last token
// before it, or a plain word), walked byte by byte through the matcher.
class ReferenceMask {
 public:
  explicit ReferenceMask(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {
    EncodeOptions plain;
    plain.add_special_tokens = false;
    context_ = tokenizer.encode("Hello", plain).value();
  }

  std::string token_bytes(int32_t id) const {
    if (tokenizer_.is_special(id)) {
      return "";
    }
    std::vector<int32_t> ids = context_;
    const std::string before = tokenizer_.decode_bytes(ids, true).value();
    ids.push_back(id);
    Result<std::string> after = tokenizer_.decode_bytes(ids, true);
    if (!after.ok()) {
      return "";
    }
    EXPECT_EQ(after->substr(0, before.size()), before);
    return after->substr(before.size());
  }

  std::vector<bool> allowed(GrammarMatcher& matcher) const {
    std::vector<bool> out(static_cast<size_t>(tokenizer_.vocab_size()));
    for (int32_t id = 0; id < tokenizer_.vocab_size(); ++id) {
      const std::string bytes = token_bytes(id);
      out[static_cast<size_t>(id)] = !bytes.empty() && matcher.accepts(bytes);
    }
    return out;
  }

  void generated(int32_t id) { context_.back() = id; }

 private:
  const Tokenizer& tokenizer_;
  std::vector<int32_t> context_;
};

constexpr const char* kJsonGrammar = R"gbnf(root ::= object
value ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\""
number ::= "-"? ([0-9] | [1-9] [0-9]{0,15}) ("." [0-9]{1,8})? ([eE] [-+]? [0-9]{1,3})?
ws ::= [ \t\n]{0,3}
)gbnf";

constexpr const char* kUnicodeGrammar =
    R"gbnf(root ::= "«" [α-ω]{1,4} "» " ("日本" | "é" | "🙂"){1,3} [^a-z\x00-\x7F]{2} "."
)gbnf";

constexpr const char* kArithmeticGrammar = R"gbnf(root ::= expr
expr ::= term (ws ("+" | "-" | "*") ws term)*
term ::= [0-9]{1,4} | "(" ws expr ws ")"
ws ::= " "?
)gbnf";

struct TokenizerCase {
  const char* tokenizer;
  int steps;
};

void check_masks_against_reference(const Tokenizer& tokenizer, const char* gbnf, int steps, uint64_t seed) {
  Result<std::shared_ptr<const TokenVocabulary>> vocab = TokenVocabulary::build(tokenizer);
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  auto grammar = compile_ok(gbnf, *vocab);
  ASSERT_TRUE(grammar);
  GrammarMatcher matcher(grammar);
  ReferenceMask reference(tokenizer);
  std::mt19937_64 rng(seed);
  TokenBitmask mask(tokenizer.vocab_size());
  for (int step = 0; step < steps && !matcher.is_complete(); ++step) {
    ASSERT_TRUE(matcher.fill_mask(mask).ok());
    const std::vector<bool> expected = reference.allowed(matcher);
    std::vector<int32_t> allowed;
    int mismatches = 0;
    for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
      if (mask.test(id) != expected[static_cast<size_t>(id)] && ++mismatches <= 5) {
        ADD_FAILURE() << "step " << step << ": token " << id << " '" << reference.token_bytes(id) << "' is "
                      << (mask.test(id) ? "allowed" : "refused") << " by the mask, "
                      << (expected[static_cast<size_t>(id)] ? "allowed" : "refused") << " by the reference";
      }
      if (expected[static_cast<size_t>(id)]) {
        allowed.push_back(id);
      }
    }
    ASSERT_EQ(mismatches, 0) << gbnf;
    ASSERT_FALSE(allowed.empty()) << "step " << step << ": no token continues the text";
    // Half the time a multi-byte token, which is where tokens straddle grammar boundaries.
    std::vector<int32_t> long_ones;
    for (int32_t id : allowed) {
      if ((*vocab)->piece(id).size() >= 2) {
        long_ones.push_back(id);
      }
    }
    const std::vector<int32_t>& pool = (!long_ones.empty() && rng() % 2 == 0) ? long_ones : allowed;
    const int32_t chosen = pool[rng() % pool.size()];
    ASSERT_TRUE(matcher.accept_token(chosen).ok());
    reference.generated(chosen);
  }
}

class GrammarMasks : public ::testing::TestWithParam<TokenizerCase> {};

TEST_P(GrammarMasks, EqualTheBruteForceReference) {
  std::unique_ptr<Tokenizer> tokenizer = load_fixture_tokenizer(GetParam().tokenizer);
  ASSERT_TRUE(tokenizer);
  int seed = 0;
  for (const char* gbnf : {kJsonGrammar, kUnicodeGrammar, kArithmeticGrammar}) {
    for (int run = 0; run < 2; ++run) {
      SCOPED_TRACE(::testing::Message() << GetParam().tokenizer << " seed " << seed);
      check_masks_against_reference(*tokenizer, gbnf, GetParam().steps, static_cast<uint64_t>(++seed));
    }
  }
}

// kjv: the bundled model's SentencePiece-style BPE with byte fallback (4096 tokens); llama2: the
// same kind at 32000 tokens; llama3: byte-level BPE, 128256 tokens.
INSTANTIATE_TEST_SUITE_P(Tokenizers, GrammarMasks,
                         ::testing::Values(TokenizerCase{"kjv", 24}, TokenizerCase{"llama2", 10},
                                           TokenizerCase{"llama3", 4}),
                         [](const auto& test_case) { return std::string(test_case.param.tokenizer); });

}  // namespace
}  // namespace staticlm
