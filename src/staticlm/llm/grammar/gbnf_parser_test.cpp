// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/grammar/gbnf_parser.h"

#include <string>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

using Kind = GrammarExpr::Kind;

GrammarAst parse_ok(std::string_view text) {
  Result<GrammarAst> ast = parse_gbnf(text);
  EXPECT_TRUE(ast.ok()) << ast.status().to_string();
  return ast.ok() ? std::move(ast).value() : GrammarAst{};
}

std::string parse_error(std::string_view text) {
  Result<GrammarAst> ast = parse_gbnf(text);
  EXPECT_FALSE(ast.ok()) << "parsed: " << text;
  return ast.ok() ? "" : ast.status().message();
}

const GrammarRule& rule(const GrammarAst& ast, std::string_view name) {
  for (const GrammarRule& r : ast.rules) {
    if (r.name == name) {
      return r;
    }
  }
  ADD_FAILURE() << "no rule " << name;
  static const GrammarRule none;
  return none;
}

TEST(GbnfParser, RulesSequencesAlternativesAndReferences) {
  const GrammarAst ast = parse_ok("root ::= greeting \" \" name\ngreeting ::= \"hi\" | \"hello\"\nname ::= [a-z]+\n");
  ASSERT_EQ(ast.rules.size(), 3u);
  EXPECT_EQ(ast.rules[ast.root].name, "root");
  const GrammarExpr& root = rule(ast, "root").body;
  ASSERT_EQ(root.kind, Kind::kSequence);
  ASSERT_EQ(root.children.size(), 3u);
  EXPECT_EQ(root.children[0].kind, Kind::kRuleRef);
  EXPECT_EQ(ast.rules[root.children[0].rule].name, "greeting");
  EXPECT_EQ(root.children[1].text, U" ");
  const GrammarExpr& greeting = rule(ast, "greeting").body;
  ASSERT_EQ(greeting.kind, Kind::kAlternation);
  EXPECT_EQ(greeting.children[1].text, U"hello");
  const GrammarExpr& name = rule(ast, "name").body;
  ASSERT_EQ(name.kind, Kind::kRepeat);
  EXPECT_EQ(name.min_repeat, 1u);
  EXPECT_EQ(name.max_repeat, kUnboundedRepeat);
  ASSERT_EQ(name.children[0].ranges.size(), 1u);
  EXPECT_EQ(name.children[0].ranges[0].first, U'a');
  EXPECT_EQ(name.children[0].ranges[0].last, U'z');
}

TEST(GbnfParser, RepetitionOperators) {
  const GrammarAst ast = parse_ok("root ::= \"a\"* \"b\"? \"c\"{3} \"d\"{2,} \"e\"{1,4} \"f\"{,5}");
  const GrammarExpr& body = ast.rules[0].body;
  ASSERT_EQ(body.children.size(), 6u);
  const std::pair<uint32_t, uint32_t> expected[] = {{0, kUnboundedRepeat}, {0, 1}, {3, 3},
                                                    {2, kUnboundedRepeat}, {1, 4}, {0, 5}};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(body.children[i].kind, Kind::kRepeat) << i;
    EXPECT_EQ(body.children[i].min_repeat, expected[i].first) << i;
    EXPECT_EQ(body.children[i].max_repeat, expected[i].second) << i;
  }
}

TEST(GbnfParser, CharacterClassesRangesNegationAndEscapes) {
  const GrammarAst ast = parse_ok(R"(root ::= [^"\\\x00-\x1F] [a-cx\-] [\u00e9-\U0001F600] "\t\n\r\"\\\x41\u00e9")");
  const GrammarExpr& body = ast.rules[0].body;
  const auto& negated = body.children[0].ranges;
  // Everything but ", \ and the controls: [0x20-0x21], [0x23-0x5B], [0x5D-0xD7FF], [0xE000-0x10FFFF].
  ASSERT_EQ(negated.size(), 4u);
  EXPECT_EQ(negated[0].first, 0x20u);
  EXPECT_EQ(negated[0].last, 0x21u);
  EXPECT_EQ(negated[1].first, 0x23u);
  EXPECT_EQ(negated[2].last, 0xD7FFu);
  EXPECT_EQ(negated[3].first, 0xE000u);
  EXPECT_EQ(negated[3].last, kMaxCodePoint);
  const auto& listed = body.children[1].ranges;
  ASSERT_EQ(listed.size(), 3u);  // [-] [a-c] [x]
  EXPECT_EQ(listed[0].first, U'-');
  EXPECT_EQ(body.children[2].ranges[0].first, 0xE9u);
  EXPECT_EQ(body.children[2].ranges[0].last, 0xD7FFu);  // the surrogates are cut out
  EXPECT_EQ(body.children[2].ranges[1].last, 0x1F600u);
  EXPECT_EQ(body.children[3].text, U"\t\n\r\"\\A\u00e9");
}

TEST(GbnfParser, CommentsNewlinesAndContinuations) {
  const GrammarAst ast = parse_ok(
      "# leading comment\n"
      "root ::= (\n"
      "    \"a\"   # inside parentheses\n"
      "    | \"b\"\n"
      "  ) tail |\n"
      "  \"c\"\n"
      "  | \"d\"\n"
      "\n"
      "tail ::=\n"
      "  \"t\"\n");
  const GrammarExpr& root = rule(ast, "root").body;
  ASSERT_EQ(root.kind, Kind::kAlternation);
  EXPECT_EQ(root.children.size(), 3u);
  EXPECT_EQ(rule(ast, "tail").body.text, U"t");
}

TEST(GbnfParser, AnyCharacterAndUtf8Literals) {
  const GrammarAst ast = parse_ok("root ::= . \"日本\" [ぁ-ゟ]");
  const GrammarExpr& body = ast.rules[0].body;
  EXPECT_EQ(body.children[0].ranges.size(), 2u);  // everything but the surrogates
  EXPECT_EQ(body.children[1].text, U"日本");
  EXPECT_EQ(body.children[2].ranges[0].first, 0x3041u);
}

TEST(GbnfParser, RefusesWhatItCannotParse) {
  EXPECT_NE(parse_error("root ::= missing").find("rule 'missing' is not defined"), std::string::npos);
  EXPECT_NE(parse_error("start ::= \"a\"").find("no rule 'root'"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"a\"\nroot ::= \"b\"").find("defined twice"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"abc").find("unterminated string"), std::string::npos);
  EXPECT_NE(parse_error("root ::= [abc").find("unterminated character class"), std::string::npos);
  EXPECT_NE(parse_error("root ::= (\"a\"").find("expected ')'"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"\\q\"").find("unknown escape"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"\\uD800\"").find("not a Unicode character"), std::string::npos);
  EXPECT_NE(parse_error("root ::= [z-a]").find("ends before it starts"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"a\"{3,2}").find("maximum is below the minimum"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"a\"{99999}").find("repetition count above"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"a\" b ::= \"c\"").find("missing newline"), std::string::npos);
  EXPECT_NE(parse_error("root = \"a\"").find("expected '::='"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"\xff\"").find("not valid UTF-8"), std::string::npos);
  EXPECT_NE(parse_error("root ::= [^\\x00-\\U0010FFFF]").find("matches no character"), std::string::npos);
  // Errors say where.
  EXPECT_NE(parse_error("root ::= \"a\"\n  x ::= @").find("line 2, column 9"), std::string::npos);
  Result<GrammarAst> token_ref = parse_gbnf("root ::= <[1000]>");
  ASSERT_FALSE(token_ref.ok());
  EXPECT_EQ(token_ref.status().code(), StatusCode::kUnimplemented);
}

TEST(GbnfParser, EnforcesItsLimits) {
  GbnfLimits limits;
  limits.max_nesting = 3;
  EXPECT_TRUE(parse_gbnf("root ::= (((\"a\")))", "root", limits).ok());
  Result<GrammarAst> deep = parse_gbnf("root ::= ((((\"a\"))))", "root", limits);
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("nest deeper than 3"), std::string::npos);
  limits.max_text_bytes = 8;
  EXPECT_FALSE(parse_gbnf("root ::= \"abcdef\"", "root", limits).ok());
  EXPECT_NE(parse_error("root ::= \"a\"*****").find("more than 4 repetition operators"), std::string::npos);
}

TEST(GbnfParser, OtherRootRule) {
  Result<GrammarAst> ast = parse_gbnf("a ::= \"x\"\nb ::= a a", "b");
  ASSERT_TRUE(ast.ok()) << ast.status().to_string();
  EXPECT_EQ(ast->rules[ast->root].name, "b");
}

}  // namespace
}  // namespace staticlm
