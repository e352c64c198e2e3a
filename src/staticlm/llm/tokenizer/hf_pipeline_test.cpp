// SPDX-License-Identifier: Apache-2.0
// Behaviour of the tokenizer.json components on tiny hand-written files, where the expected ids
// follow from the vocabulary the test itself lays out.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "staticlm/llm/tokenizer/tokenizer.h"
#include "staticlm/llm/tokenizer/tokenizer_test_docs.h"

namespace staticlm {
namespace {

using Ids = std::vector<int32_t>;
using nlohmann::json;
using tokenizer_test::abc_document;
using tokenizer_test::byte_id;
using tokenizer_test::llama_style_document;

// abc_document ids.
constexpr int32_t kA = 0, kB = 1, kC = 2, kAB = 3, kABC = 4, kBC = 5;

std::unique_ptr<Tokenizer> load(const json& document, std::optional<std::string> config = std::nullopt) {
  auto tokenizer =
      load_tokenizer_json(document.dump(), config ? std::optional<std::string_view>(*config) : std::nullopt);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
  return tokenizer.ok() ? std::move(tokenizer).value() : nullptr;
}

Ids encode(const Tokenizer& tokenizer, std::string_view text, EncodeOptions options = {false, true}) {
  auto ids = tokenizer.encode(text, options);
  EXPECT_TRUE(ids.ok()) << ids.status().to_string();
  return ids.ok() ? *ids : Ids{};
}

std::string decode(const Tokenizer& tokenizer, const Ids& ids, bool skip_special = false) {
  auto text = tokenizer.decode(ids, skip_special);
  EXPECT_TRUE(text.ok()) << text.status().to_string();
  return text.ok() ? *text : std::string();
}

json split_on_b(const std::string& behavior, bool invert = false) {
  return {{"type", "Split"}, {"pattern", {{"String", "b"}}}, {"behavior", behavior}, {"invert", invert}};
}

TEST(HfPipelineTest, BpeMergesByRankAcrossTheWholeWord) {
  auto tokenizer = load(abc_document());
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(encode(*tokenizer, "abc"), (Ids{kABC}));
  EXPECT_EQ(encode(*tokenizer, "bc"), (Ids{kBC}));
  EXPECT_EQ(encode(*tokenizer, "cab"), (Ids{kC, kAB}));
  EXPECT_EQ(decode(*tokenizer, {kABC, kBC}), "abcbc");
}

TEST(HfPipelineTest, SplitBehaviorsDecideWhereWordsEnd) {
  struct Case {
    json pre_tokenizer;
    Ids expected;
  };
  const std::vector<Case> cases = {
      {split_on_b("Isolated"), {kA, kB, kC}},
      {split_on_b("MergedWithPrevious"), {kAB, kC}},
      {split_on_b("MergedWithNext"), {kA, kBC}},
      {split_on_b("Removed"), {kA, kC}},
      {split_on_b("Removed", true), {kB}},
      {{{"type", "Split"}, {"pattern", {{"Regex", "[ac]"}}}, {"behavior", "Isolated"}}, {kA, kB, kC}},
  };
  for (const Case& item : cases) {
    auto document = abc_document();
    document["pre_tokenizer"] = item.pre_tokenizer;
    auto tokenizer = load(document);
    ASSERT_NE(tokenizer, nullptr);
    EXPECT_EQ(encode(*tokenizer, "abc"), item.expected) << item.pre_tokenizer.dump();
  }
}

TEST(HfPipelineTest, DigitsAndSequencesOfPreTokenizers) {
  auto document = abc_document();
  document["model"]["vocab"].update({{"1", 6}, {"2", 7}, {"12", 8}});
  document["model"]["merges"].push_back("1 2");
  document["pre_tokenizer"] = {{"type", "Digits"}, {"individual_digits", false}};
  auto runs = load(document);
  ASSERT_NE(runs, nullptr);
  EXPECT_EQ(encode(*runs, "ab12c"), (Ids{kAB, 8, kC}));
  document["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}}, split_on_b("Isolated")}}};
  auto single = load(document);
  ASSERT_NE(single, nullptr);
  EXPECT_EQ(encode(*single, "ab12c"), (Ids{kA, kB, 6, 7, kC}));
}

TEST(HfPipelineTest, ByteFallbackSpellsUnknownCharactersAsBytes) {
  auto tokenizer = load(llama_style_document());
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(encode(*tokenizer, "ab ab", {true, true}), (Ids{1, 263, 263}));
  // "€" is E2 82 AC; "c" is 0x63.
  Ids euro = {263, byte_id(0xE2), byte_id(0x82), byte_id(0xAC), byte_id(0x63)};
  EXPECT_EQ(encode(*tokenizer, "ab\u20ACc"), euro);
  EXPECT_EQ(decode(*tokenizer, euro), "ab\u20ACc");
  Ids with_bos = {1, 263, 263};
  EXPECT_EQ(decode(*tokenizer, with_bos, true), "ab ab");
  EXPECT_EQ(decode(*tokenizer, with_bos, false), "<s> ab ab");
  // An unfinished byte sequence decodes to U+FFFD.
  EXPECT_EQ(decode(*tokenizer, {263, byte_id(0xE2)}), "ab\uFFFD");
  EXPECT_EQ(tokenizer->bos_id(), std::optional<int32_t>(1));
  EXPECT_EQ(tokenizer->vocab_size(), 264);
}

TEST(HfPipelineTest, UnknownCharactersFuseIntoOneUnkWithoutByteFallback) {
  auto document = llama_style_document();
  document["model"]["byte_fallback"] = false;
  auto tokenizer = load(document);
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(encode(*tokenizer, "ab\u20AC\u20ACab"), (Ids{263, 0, 262}));
}

TEST(HfPipelineTest, AddedTokensMatchLongestFirstAndHonourStripFlags) {
  auto document = abc_document();
  document["model"]["vocab"].update({{" ", 6}});
  document["added_tokens"] = {
      {{"id", 7}, {"content", "<m>"}, {"special", true}, {"lstrip", true}, {"normalized", false}},
      {{"id", 8}, {"content", "<m>>"}, {"special", true}, {"rstrip", true}, {"normalized", false}},
      {{"id", 9}, {"content", "ca"}, {"special", false}, {"single_word", true}, {"normalized", false}},
  };
  auto tokenizer = load(document);
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(encode(*tokenizer, "a  <m>b"), (Ids{kA, 7, kB}));
  EXPECT_EQ(encode(*tokenizer, "a<m>>  b"), (Ids{kA, 8, kB}));
  EXPECT_EQ(encode(*tokenizer, "ca ab"), (Ids{9, 6, kAB}));
  EXPECT_EQ(encode(*tokenizer, "cab"), (Ids{kC, kAB}));  // "ca" inside a word does not match
  // parse_special=false leaves special text to the model (here '<' and 'm' are unknown: dropped).
  EXPECT_EQ(encode(*tokenizer, "a<m>", {false, false}), (Ids{kA}));
  EXPECT_EQ(decode(*tokenizer, {kA, 7, kB}, true), "ab");
  EXPECT_EQ(decode(*tokenizer, {kA, 7, kB}, false), "a<m>b");
}

TEST(HfPipelineTest, MetaspacePrependSchemeFirstOnlyAtTheStartOfTheInput) {
  json document = {
      {"added_tokens", {{{"id", 3}, {"content", "<s>"}, {"special", true}, {"normalized", false}}}},
      {"pre_tokenizer",
       {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "first"}, {"split", true}}},
      {"decoder", {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "first"}}},
      {"model", {{"type", "BPE"}, {"vocab", {{"\u2581", 0}, {"a", 1}, {"\u2581a", 2}}}, {"merges", {"\u2581 a"}}}},
  };
  auto tokenizer = load(document);
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(encode(*tokenizer, "a a"), (Ids{2, 2}));
  EXPECT_EQ(encode(*tokenizer, "<s>a a"), (Ids{3, 1, 2}));
  EXPECT_EQ(decode(*tokenizer, {2, 2}), "a a");
  document["pre_tokenizer"]["prepend_scheme"] = "always";
  auto always = load(document);
  ASSERT_NE(always, nullptr);
  EXPECT_EQ(encode(*always, "<s>a a"), (Ids{3, 2, 2}));
}

TEST(HfPipelineTest, NormalizersRewriteTextBeforeTheModel) {
  auto document = abc_document();
  document["normalizer"] = {{"type", "Sequence"},
                            {"normalizers",
                             {{{"type", "NFKC"}},
                              {{"type", "Lowercase"}},
                              {{"type", "Replace"}, {"pattern", {{"Regex", "x+"}}}, {"content", "b"}}}}};
  auto tokenizer = load(document);
  ASSERT_NE(tokenizer, nullptr);
  // Fullwidth "ＡＢＣ" -> "ABC" (NFKC) -> "abc"; "axxxc" -> "abc".
  EXPECT_EQ(encode(*tokenizer, "\uFF21\uFF22\uFF23"), (Ids{kABC}));
  EXPECT_EQ(encode(*tokenizer, "AxXxC"), (Ids{kABC}));
}

TEST(HfPipelineTest, IgnoreMergesTakesWholeWordsFromTheVocabulary) {
  auto document = abc_document();
  document["model"]["vocab"]["ca"] = 6;
  auto merged = load(document);
  ASSERT_NE(merged, nullptr);
  EXPECT_EQ(encode(*merged, "ca"), (Ids{kC, kA}));
  document["model"]["ignore_merges"] = true;
  auto whole = load(document);
  ASSERT_NE(whole, nullptr);
  EXPECT_EQ(encode(*whole, "ca"), (Ids{6}));
}

TEST(HfPipelineTest, PostProcessorsAndConfigAddSpecialTokens) {
  auto document = abc_document();
  document["added_tokens"] = {{{"id", 6}, {"content", "<s>"}, {"special", true}},
                              {{"id", 7}, {"content", "</s>"}, {"special", true}}};
  document["post_processor"] = {{"type", "TemplateProcessing"},
                                {"single", "<s> $A </s>"},
                                {"special_tokens", {{"<s>", {{"ids", {6}}}}, {"</s>", {{"ids", {7}}}}}}};
  auto templated = load(document);
  ASSERT_NE(templated, nullptr);
  EXPECT_EQ(encode(*templated, "abc", {true, true}), (Ids{6, kABC, 7}));
  EXPECT_EQ(templated->eos_ids(), (Ids{7}));

  document["post_processor"] = {{"type", "RobertaProcessing"}, {"cls", {"<s>", 6}}, {"sep", {"</s>", 7}}};
  auto roberta = load(document);
  ASSERT_NE(roberta, nullptr);
  EXPECT_EQ(encode(*roberta, "ab", {true, true}), (Ids{6, kAB, 7}));

  // With a ByteLevel post-processor (adds nothing), add_bos_token in the config supplies BOS.
  document["post_processor"] = {{"type", "ByteLevel"}};
  auto bos_from_config =
      load(document, std::string(R"({"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": true})"));
  ASSERT_NE(bos_from_config, nullptr);
  EXPECT_EQ(encode(*bos_from_config, "ab", {true, true}), (Ids{6, kAB}));
  EXPECT_EQ(encode(*bos_from_config, "ab", {false, true}), (Ids{kAB}));
  auto no_config = load(document);
  ASSERT_NE(no_config, nullptr);
  EXPECT_EQ(encode(*no_config, "ab", {true, true}), (Ids{kAB}));
}

TEST(HfPipelineTest, CleanUpTokenizationSpacesFollowsTheConfig) {
  auto document = abc_document();
  document["model"]["vocab"].update({{" .", 6}, {" 's", 7}});
  document["decoder"] = nullptr;  // tokens are joined with spaces
  auto plain = load(document, std::string(R"({"clean_up_tokenization_spaces": false})"));
  auto cleaned = load(document, std::string(R"({"clean_up_tokenization_spaces": true})"));
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(cleaned, nullptr);
  EXPECT_EQ(decode(*plain, {kA, kB}), "a b");
  EXPECT_EQ(decode(*plain, {kAB, 6}), "ab  .");
  EXPECT_EQ(decode(*cleaned, {kAB, 6}), "ab .");
  EXPECT_EQ(clean_up_tokenization("a . b 's c n't ?"), "a. b's cn't?");
  EXPECT_TRUE(cleaned->clean_up_tokenization_spaces());
  EXPECT_FALSE(plain->clean_up_tokenization_spaces());
}

TEST(HfPipelineTest, RejectsInvalidUtf8Input) {
  auto tokenizer = load(abc_document());
  ASSERT_NE(tokenizer, nullptr);
  auto ids = tokenizer->encode("ab\xFF", EncodeOptions{});
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ids.status().message().find("not valid UTF-8"), std::string::npos);
}

}  // namespace
}  // namespace staticlm
