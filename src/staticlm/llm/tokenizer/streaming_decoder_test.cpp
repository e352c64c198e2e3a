// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/tokenizer/streaming_decoder.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/llm/tokenizer/tokenizer_test_docs.h"
#include "staticlm/llm/tokenizer/tokenizer_test_util.h"

namespace staticlm {
namespace {

using tokenizer_test::byte_id;
using tokenizer_test::is_valid_utf8;
using tokenizer_test::llama_style_document;
using Chunks = std::vector<std::string>;

std::unique_ptr<Tokenizer> load(const nlohmann::json& document, std::optional<std::string> config = std::nullopt) {
  auto tokenizer =
      load_tokenizer_json(document.dump(), config ? std::optional<std::string_view>(*config) : std::nullopt);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
  return tokenizer.ok() ? std::move(tokenizer).value() : nullptr;
}

// Feeds every id and returns the chunks; the last element is what flush returned.
Chunks stream(const Tokenizer& tokenizer, const std::vector<int32_t>& ids, bool skip_special) {
  StreamingDecoder decoder(tokenizer, skip_special);
  Chunks chunks;
  for (int32_t id : ids) {
    auto chunk = decoder.feed(id);
    EXPECT_TRUE(chunk.ok()) << chunk.status().to_string();
    chunks.push_back(chunk.ok() ? *chunk : "");
  }
  auto rest = decoder.flush();
  EXPECT_TRUE(rest.ok());
  chunks.push_back(rest.ok() ? *rest : "");
  return chunks;
}

std::string joined(const Chunks& chunks) {
  std::string text;
  for (const std::string& chunk : chunks) text += chunk;
  return text;
}

TEST(StreamingDecoderTest, HoldsByteFallbackBytesUntilTheCharacterIsComplete) {
  auto tokenizer = load(llama_style_document());
  ASSERT_NE(tokenizer, nullptr);
  std::vector<int32_t> ids = {263, byte_id(0xE2), byte_id(0x82), byte_id(0xAC), 263};
  Chunks chunks = stream(*tokenizer, ids, false);
  EXPECT_EQ(chunks, (Chunks{"ab", "", "", "\u20AC", " ab", ""}));
  for (const std::string& chunk : chunks) EXPECT_TRUE(is_valid_utf8(chunk));
  EXPECT_EQ(joined(chunks), *tokenizer->decode(ids, false));
}

TEST(StreamingDecoderTest, LeadingSpaceRulesMatchAFullDecode) {
  auto tokenizer = load(llama_style_document());
  ASSERT_NE(tokenizer, nullptr);
  // The Strip decoder drops the first piece's space: only the first visible token loses it.
  EXPECT_EQ(stream(*tokenizer, {1, 263, 263}, true), (Chunks{"", "ab", " ab", ""}));
  EXPECT_EQ(stream(*tokenizer, {1, 263, 263}, false), (Chunks{"<s>", " ab", " ab", ""}));
  // A skipped special token in the middle must not make the next word look like the first one.
  std::vector<int32_t> ids = {263, 2, 263};
  Chunks chunks = stream(*tokenizer, ids, true);
  EXPECT_EQ(chunks, (Chunks{"ab", "", " ab", ""}));
  EXPECT_EQ(joined(chunks), *tokenizer->decode(ids, true));
}

TEST(StreamingDecoderTest, AContinuationKeepsItsFirstLeadingSpace) {
  auto tokenizer = load(llama_style_document());
  ASSERT_NE(tokenizer, nullptr);
  StreamingDecoder decoder(*tokenizer, true);
  // After a prompt "<s> ab", the next "ab" is a second word; the prompt is not emitted again.
  const std::vector<int32_t> prompt = {1, 263};
  decoder.continue_after(prompt);
  EXPECT_EQ(*decoder.feed(263), " ab");
  EXPECT_EQ(*decoder.flush(), "");
  const std::vector<int32_t> whole = {1, 263, 263};
  EXPECT_EQ(*tokenizer->decode(whole, true), "ab ab");
  // A prompt of special tokens only leaves the first piece as the start of the text.
  const std::vector<int32_t> special = {1};
  decoder.continue_after(special);
  EXPECT_EQ(*decoder.feed(263), "ab");
}

TEST(StreamingDecoderTest, FlushRepairsAnUnfinishedCharacterAndResets) {
  auto tokenizer = load(llama_style_document());
  ASSERT_NE(tokenizer, nullptr);
  StreamingDecoder decoder(*tokenizer, false);
  EXPECT_EQ(*decoder.feed(263), "ab");
  EXPECT_EQ(*decoder.feed(byte_id(0xF0)), "");
  EXPECT_EQ(*decoder.feed(byte_id(0x9F)), "");
  EXPECT_EQ(*decoder.flush(), "\uFFFD");
  // After flush the next token is the first one again.
  EXPECT_EQ(*decoder.feed(263), "ab");
}

TEST(StreamingDecoderTest, InvalidBytesAreReplacedOnceTheSequenceCannotComplete) {
  auto tokenizer = load(llama_style_document());
  ASSERT_NE(tokenizer, nullptr);
  std::vector<int32_t> ids = {263, byte_id(0xE2), 263};
  Chunks chunks = stream(*tokenizer, ids, false);
  EXPECT_EQ(chunks, (Chunks{"ab", "", "\uFFFD ab", ""}));
  EXPECT_EQ(joined(chunks), *tokenizer->decode(ids, false));
}

TEST(StreamingDecoderTest, RejectsUnknownIdsAndKeepsItsState) {
  auto tokenizer = load(llama_style_document());
  ASSERT_NE(tokenizer, nullptr);
  StreamingDecoder decoder(*tokenizer, false);
  EXPECT_EQ(*decoder.feed(263), "ab");
  auto bad = decoder.feed(5000);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(*decoder.feed(263), " ab");
}

TEST(StreamingDecoderTest, CleanUpWaitsForTextThatCouldStillChange) {
  auto document = tokenizer_test::abc_document();
  document["model"]["vocab"].update({{" '", 6}, {"s", 7}, {" .", 8}});
  auto tokenizer = load(document, std::string(R"({"clean_up_tokenization_spaces": true})"));
  ASSERT_NE(tokenizer, nullptr);
  std::vector<int32_t> ids = {3, 6, 7, 8};
  Chunks chunks = stream(*tokenizer, ids, false);
  EXPECT_EQ(chunks, (Chunks{"ab", "", "", "", "'s."}));
  EXPECT_EQ(joined(chunks), "ab's.");
  EXPECT_EQ(joined(chunks), *tokenizer->decode(ids, false));
}

}  // namespace
}  // namespace staticlm
