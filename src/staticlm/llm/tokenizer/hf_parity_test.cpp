// SPDX-License-Identifier: Apache-2.0
// Parity with the JavaScript port of Hugging Face tokenizers on real tokenizer.json files: the
// fixtures in tests/fixtures/tokenizers/ were produced by scripts/tokenizer_reference.mjs. Phi-3's
// tokenizer.json is rebuilt from llama.cpp's vocabulary GGUF, and its ids are the ones Hugging Face
// transformers gave (scripts/gguf_vocab_to_tokenizer_json.py).
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "staticlm/llm/tokenizer/streaming_decoder.h"
#include "staticlm/llm/tokenizer/tokenizer.h"
#include "staticlm/llm/tokenizer/tokenizer_test_util.h"

namespace staticlm {
namespace {

using tokenizer_test::fixture_path;
using tokenizer_test::is_valid_utf8;
using tokenizer_test::read_file;
using tokenizer_test::read_gzip_file;

struct Family {
  std::unique_ptr<Tokenizer> tokenizer;
  nlohmann::json expected;
};

// Loading the large vocabularies takes a while, so each family is loaded once for all tests.
const Family& family(const std::string& name) {
  static std::map<std::string, Family> loaded;
  auto it = loaded.find(name);
  if (it != loaded.end()) return it->second;
  Family entry;
  std::string json_text = read_gzip_file(fixture_path(name + ".tokenizer.json.gz"));
  std::string config_text = read_file(fixture_path(name + ".tokenizer_config.json"));
  auto tokenizer = load_tokenizer_json(json_text, config_text);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
  if (tokenizer.ok()) entry.tokenizer = std::move(tokenizer).value();
  entry.expected = nlohmann::json::parse(read_file(fixture_path(name + ".expected.json")));
  return loaded.emplace(name, std::move(entry)).first->second;
}

std::vector<int32_t> ids_of(const nlohmann::json& array) {
  return array.get<std::vector<int32_t>>();
}

class HfParityTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const Family& loaded = family(GetParam());
    ASSERT_NE(loaded.tokenizer, nullptr);
    tokenizer_ = loaded.tokenizer.get();
    cases_ = &loaded.expected.at("cases");
    ASSERT_GE(cases_->size(), 50u);
  }
  const Tokenizer* tokenizer_ = nullptr;
  const nlohmann::json* cases_ = nullptr;
};

TEST_P(HfParityTest, EncodeMatchesReferenceWithAndWithoutSpecialTokens) {
  for (const auto& item : *cases_) {
    std::string text = item.at("text");
    SCOPED_TRACE("text: " + text);
    auto with_special = tokenizer_->encode(text, EncodeOptions{true, true});
    ASSERT_TRUE(with_special.ok()) << with_special.status().to_string();
    EXPECT_EQ(*with_special, ids_of(item.at("ids")));
    auto plain = tokenizer_->encode(text, EncodeOptions{false, true});
    ASSERT_TRUE(plain.ok()) << plain.status().to_string();
    EXPECT_EQ(*plain, ids_of(item.at("ids_no_special")));
  }
}

TEST_P(HfParityTest, DecodeMatchesReference) {
  int round_trips = 0;
  for (const auto& item : *cases_) {
    std::string text = item.at("text");
    SCOPED_TRACE("text: " + text);
    std::vector<int32_t> ids = ids_of(item.at("ids"));
    auto decoded = tokenizer_->decode(ids, false);
    ASSERT_TRUE(decoded.ok()) << decoded.status().to_string();
    EXPECT_EQ(*decoded, item.at("decoded").get<std::string>());
    auto skipped = tokenizer_->decode(ids, true);
    ASSERT_TRUE(skipped.ok()) << skipped.status().to_string();
    EXPECT_EQ(*skipped, item.at("decoded_skip_special").get<std::string>());
    if (item.at("roundtrip").get<bool>()) {
      ++round_trips;
      auto plain = tokenizer_->decode(ids_of(item.at("ids_no_special")), false);
      ASSERT_TRUE(plain.ok()) << plain.status().to_string();
      EXPECT_EQ(*plain, text);
    }
  }
  EXPECT_GT(round_trips, 40);
}

TEST_P(HfParityTest, StreamingDecodeEqualsFullDecodeAndStaysValidUtf8) {
  for (bool skip_special : {false, true}) {
    for (const auto& item : *cases_) {
      std::string text = item.at("text");
      SCOPED_TRACE("text: " + text + (skip_special ? " (skip special)" : ""));
      std::vector<int32_t> ids = ids_of(item.at("ids"));
      StreamingDecoder stream(*tokenizer_, skip_special);
      std::string joined;
      for (int32_t id : ids) {
        auto chunk = stream.feed(id);
        ASSERT_TRUE(chunk.ok()) << chunk.status().to_string();
        EXPECT_TRUE(is_valid_utf8(*chunk)) << "after id " << id;
        joined += *chunk;
      }
      auto rest = stream.flush();
      ASSERT_TRUE(rest.ok());
      joined += *rest;
      auto full = tokenizer_->decode(ids, skip_special);
      ASSERT_TRUE(full.ok());
      EXPECT_EQ(joined, *full);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, HfParityTest, ::testing::Values("llama2", "llama3", "qwen3", "gemma3"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) { return param_info.param; });

// Phi-3-mini: tokenizer.json rebuilt from llama.cpp's models/ggml-vocab-phi-3.gguf the way
// transformers' LlamaConverter builds it; the ids are llama.cpp's ggml-vocab-phi-3.gguf.out, which
// transformers produced with Phi-3-mini's real tokenizer (add_special_tokens=False).
TEST(HfGgufOracle, Phi3EncodesAsTransformersDid) {
  const Family& phi3 = family("phi3");
  ASSERT_NE(phi3.tokenizer, nullptr);
  const Tokenizer& tokenizer = *phi3.tokenizer;
  const nlohmann::json& cases = phi3.expected.at("cases");
  ASSERT_EQ(cases.size(), 46u);
  const int32_t bos = 1;
  for (const auto& item : cases) {
    std::string text = item.at("text");
    SCOPED_TRACE("text: " + text);
    std::vector<int32_t> expected = ids_of(item.at("ids_no_special"));
    auto plain = tokenizer.encode(text, EncodeOptions{false, true});
    ASSERT_TRUE(plain.ok()) << plain.status().to_string();
    EXPECT_EQ(*plain, expected);
    // The GGUF's tokenizer.ggml.add_bos_token is true: <s> comes first.
    auto with_special = tokenizer.encode(text, EncodeOptions{true, true});
    ASSERT_TRUE(with_special.ok()) << with_special.status().to_string();
    std::vector<int32_t> bos_first = {bos};
    bos_first.insert(bos_first.end(), expected.begin(), expected.end());
    EXPECT_EQ(*with_special, bos_first);
    // No case holds a literal U+2581 ("▁"), so the legacy SentencePiece decoder gives the text back.
    auto decoded = tokenizer.decode(expected, false);
    ASSERT_TRUE(decoded.ok()) << decoded.status().to_string();
    EXPECT_EQ(*decoded, text);
    const tokenizer_test::Streamed streamed = tokenizer_test::stream_decode(tokenizer, expected, false);
    EXPECT_EQ(streamed.text, text);
  }
}

TEST(HfGgufOracle, Phi3SpecialTokensAndTheirFlags) {
  const Family& phi3 = family("phi3");
  ASSERT_NE(phi3.tokenizer, nullptr);
  const Tokenizer& tokenizer = *phi3.tokenizer;
  EXPECT_EQ(tokenizer.bos_id(), std::optional<int32_t>(1));
  EXPECT_EQ(tokenizer.eos_ids(), std::vector<int32_t>{32000});
  // 32000 SentencePiece pieces and the added tokens up to <|user|>; llama.cpp's [PAD32011] ...
  // [PAD32063] (the model's 32064-row embedding) are not tokens.
  EXPECT_EQ(tokenizer.vocab_size(), 32011);
  EXPECT_EQ(tokenizer.token_to_id("<|end|>"), std::optional<int32_t>(32007));
  EXPECT_EQ(tokenizer.token_to_id("<|user|>"), std::optional<int32_t>(32010));
  EXPECT_TRUE(tokenizer.is_special(32007));
  EXPECT_TRUE(tokenizer.is_special(1));
  // <|user|>, <|end|> and <|assistant|> have rstrip, so the newlines after them are swallowed.
  auto turn = tokenizer.encode("<|user|>\nHi<|end|>\n<|assistant|>\n", EncodeOptions{false, true});
  ASSERT_TRUE(turn.ok()) << turn.status().to_string();
  auto hi = tokenizer.encode("Hi", EncodeOptions{false, true});
  ASSERT_TRUE(hi.ok()) << hi.status().to_string();
  std::vector<int32_t> expected = {32010};
  expected.insert(expected.end(), hi->begin(), hi->end());
  expected.push_back(32007);
  expected.push_back(32001);
  EXPECT_EQ(*turn, expected);
}

TEST(HfFamilyFacts, SpecialIdsComeFromTheConfig) {
  const Tokenizer& llama2 = *family("llama2").tokenizer;
  EXPECT_EQ(llama2.bos_id(), std::optional<int32_t>(1));
  EXPECT_EQ(llama2.eos_ids(), std::vector<int32_t>{2});
  EXPECT_EQ(llama2.token_to_id("<s>"), std::optional<int32_t>(1));
  EXPECT_TRUE(llama2.is_special(1));
  EXPECT_EQ(llama2.vocab_size(), 32000);

  const Tokenizer& llama3 = *family("llama3").tokenizer;
  EXPECT_EQ(llama3.bos_id(), std::optional<int32_t>(128000));
  EXPECT_EQ(llama3.eos_ids(), std::vector<int32_t>{128001});
  EXPECT_EQ(llama3.vocab_size(), 128256);
  EXPECT_TRUE(llama3.clean_up_tokenization_spaces());

  const Tokenizer& qwen3 = *family("qwen3").tokenizer;
  EXPECT_EQ(qwen3.bos_id(), std::nullopt);
  EXPECT_EQ(qwen3.eos_ids(), std::vector<int32_t>{151645});
  EXPECT_EQ(qwen3.vocab_size(), 151669);
  auto think = qwen3.token_to_id("<think>");
  ASSERT_TRUE(think.has_value());
  EXPECT_FALSE(qwen3.is_special(*think));
  EXPECT_TRUE(qwen3.is_special(151644));
  auto token = qwen3.id_to_token(151644);
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(*token, "<|im_start|>");
}

TEST(HfFamilyFacts, GemmaTakesItsTurnMarkersAndEosFromTheFiles) {
  const Tokenizer& gemma3 = *family("gemma3").tokenizer;
  EXPECT_EQ(gemma3.bos_id(), gemma3.token_to_id("<bos>"));
  ASSERT_TRUE(gemma3.bos_id().has_value());
  // The config names <end_of_turn>, not <eos>, as the end of a reply.
  EXPECT_EQ(gemma3.eos_ids(), std::vector<int32_t>{*gemma3.token_to_id("<end_of_turn>")});
  // An added token sits one past the 262144-entry model vocabulary.
  EXPECT_EQ(gemma3.vocab_size(), 262145);
  auto image = gemma3.token_to_id("<image_soft_token>");
  ASSERT_TRUE(image.has_value());
  EXPECT_TRUE(gemma3.is_special(*image));
  auto mask = gemma3.token_to_id("<mask>");
  ASSERT_TRUE(mask.has_value());
  EXPECT_FALSE(gemma3.is_special(*mask));
  auto turn = gemma3.encode("<start_of_turn>user\nHi<end_of_turn>", EncodeOptions{false, true});
  ASSERT_TRUE(turn.ok());
  EXPECT_EQ(turn->front(), *gemma3.token_to_id("<start_of_turn>"));
  EXPECT_EQ(turn->back(), *gemma3.token_to_id("<end_of_turn>"));
}

TEST(HfFamilyFacts, StreamingHoldsByteFallbackPiecesUntilTheCharacterIsWhole) {
  const Tokenizer& gemma3 = *family("gemma3").tokenizer;
  // U+3000 is not in Gemma's vocabulary: it falls back to three byte tokens.
  std::string text = "a\u3000b\u00a0c";
  auto ids = gemma3.encode(text, EncodeOptions{false, true});
  ASSERT_TRUE(ids.ok());
  int byte_tokens = 0;
  for (int32_t id : *ids) {
    auto token = gemma3.id_to_token(id);
    ASSERT_TRUE(token.ok());
    if (token->starts_with("<0x")) ++byte_tokens;
  }
  EXPECT_GE(byte_tokens, 3);
  const tokenizer_test::Streamed streamed = tokenizer_test::stream_decode(gemma3, *ids, false);
  EXPECT_EQ(streamed.text, text);
  EXPECT_GE(streamed.held, 2);
}

TEST(HfFamilyFacts, ParseSpecialFalseTreatsSpecialTextAsText) {
  const Tokenizer& qwen3 = *family("qwen3").tokenizer;
  auto parsed = qwen3.encode("<|im_start|>user", EncodeOptions{false, true});
  auto literal = qwen3.encode("<|im_start|>user", EncodeOptions{false, false});
  ASSERT_TRUE(parsed.ok());
  ASSERT_TRUE(literal.ok());
  EXPECT_EQ(parsed->front(), 151644);
  EXPECT_GT(literal->size(), parsed->size());
  for (int32_t id : *literal) EXPECT_FALSE(qwen3.is_special(id));
  auto decoded = qwen3.decode(*literal, true);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, "<|im_start|>user");
  // Non-special added tokens are still recognised.
  auto think = qwen3.encode("<think>", EncodeOptions{false, false});
  ASSERT_TRUE(think.ok());
  EXPECT_EQ(*think, std::vector<int32_t>{*qwen3.token_to_id("<think>")});
}

TEST(HfFamilyFacts, DecodeRejectsIdsOutsideTheVocabulary) {
  const Tokenizer& qwen3 = *family("qwen3").tokenizer;
  std::vector<int32_t> ids = {9707, 151936};
  auto decoded = qwen3.decode(ids, false);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(decoded.status().message().find("token id 151936 is not in the vocabulary"), std::string::npos)
      << decoded.status().message();
  std::vector<int32_t> negative = {-1};
  EXPECT_FALSE(qwen3.decode(negative, false).ok());
}

TEST(HfFamilyFacts, StreamingBuffersByteLevelPiecesOfAnEmoji) {
  for (const char* name : {"qwen3", "llama3"}) {
    SCOPED_TRACE(name);
    const Tokenizer& tokenizer = *family(name).tokenizer;
    std::string text = "Hi \U0001F600\U0001F468\u200D\U0001F469\u200D\U0001F467 \U0001F1EF\U0001F1F5 done";
    auto ids = tokenizer.encode(text, EncodeOptions{false, true});
    ASSERT_TRUE(ids.ok());
    const tokenizer_test::Streamed streamed = tokenizer_test::stream_decode(tokenizer, *ids, false);
    EXPECT_EQ(streamed.text, text);
    // Byte-level BPE splits at least one of these emoji across tokens.
    EXPECT_GT(streamed.held, 0);
  }
}

}  // namespace
}  // namespace staticlm
