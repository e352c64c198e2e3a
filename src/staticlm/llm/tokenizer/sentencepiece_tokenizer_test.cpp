// SPDX-License-Identifier: Apache-2.0
// SentencePiece models: a tiny BPE model with byte fallback is trained with the spm_train tool
// (Debian package "sentencepiece") and our encode/decode are compared with spm_encode/spm_decode.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/llm/tokenizer/streaming_decoder.h"
#include "staticlm/llm/tokenizer/tokenizer.h"
#include "staticlm/llm/tokenizer/tokenizer_test_util.h"

namespace staticlm {
namespace {

namespace fs = std::filesystem;
using tokenizer_test::read_file;

const std::vector<std::string> kInputs = {
    "hello world",
    "the quick brown fox jumps over the lazy dog",
    "  two leading spaces and a trailing one ",
    "unseen characters: \u20AC \U0001F600 \u00E9t\u00E9",
    "numbers 1234 and <s> as text",
    "streaming decoders emit text as ids arrive",
};

bool have_tool(const char* name) {
  return std::system((std::string("command -v ") + name + " >/dev/null 2>&1").c_str()) == 0;
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::vector<std::vector<int32_t>> parse_id_lines(const std::string& text) {
  std::vector<std::vector<int32_t>> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::vector<int32_t> ids;
    int32_t id = 0;
    while (fields >> id) ids.push_back(id);
    lines.push_back(ids);
  }
  return lines;
}

class SentencePieceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!have_tool("spm_train") || !have_tool("spm_encode") || !have_tool("spm_decode")) {
      skip_reason_ = "spm_train/spm_encode/spm_decode not on PATH (apt-get install sentencepiece)";
      return;
    }
    char pattern[] = "/tmp/staticlm_spm_XXXXXX";
    if (mkdtemp(pattern) == nullptr) {
      skip_reason_ = "cannot create a temporary directory";
      return;
    }
    dir_ = pattern;
    std::string corpus;
    const char* sentences[] = {
        "the quick brown fox jumps over the lazy dog", "hello world, hello there", "tokenizers split text into pieces",
        "streaming decoders emit text as ids arrive",  "the cat sat on the mat",   "numbers 123 456 789 and 1234"};
    for (int repeat = 0; repeat < 30; ++repeat) {
      for (const char* sentence : sentences) corpus += std::string(sentence) + "\n";
    }
    write_file(dir_ / "corpus.txt", corpus);
    std::string train = "spm_train --input=" + (dir_ / "corpus.txt").string() +
                        " --model_prefix=" + (dir_ / "tiny").string() +
                        " --vocab_size=330 --model_type=bpe --byte_fallback=true --character_coverage=1.0"
                        " --hard_vocab_limit=false --minloglevel=2 >" +
                        (dir_ / "train.log").string() + " 2>&1";
    if (std::system(train.c_str()) != 0) {
      skip_reason_ = "spm_train failed: " + read_file((dir_ / "train.log").string());
      return;
    }
    std::string inputs;
    for (const std::string& input : kInputs) inputs += input + "\n";
    write_file(dir_ / "inputs.txt", inputs);
    std::string model = (dir_ / "tiny.model").string();
    std::string encode = "spm_encode --model=" + model + " --output_format=id <" + (dir_ / "inputs.txt").string() +
                         " >" + (dir_ / "ids.txt").string();
    std::string decode = "spm_decode --model=" + model + " --input_format=id <" + (dir_ / "ids.txt").string() + " >" +
                         (dir_ / "decoded.txt").string();
    if (std::system(encode.c_str()) != 0 || std::system(decode.c_str()) != 0) {
      skip_reason_ = "spm_encode/spm_decode failed";
    }
  }

  static void TearDownTestSuite() {
    if (!dir_.empty()) {
      std::error_code error;
      fs::remove_all(dir_, error);
    }
  }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    std::string bytes = read_file((dir_ / "tiny.model").string());
    auto tokenizer = load_sentencepiece_model(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
    tokenizer_ = std::move(tokenizer).value();
  }

  static inline fs::path dir_;
  static inline std::string skip_reason_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_F(SentencePieceTest, EncodeAndDecodeMatchTheSentencePieceTools) {
  auto expected_ids = parse_id_lines(read_file((dir_ / "ids.txt").string()));
  std::istringstream decoded_lines(read_file((dir_ / "decoded.txt").string()));
  ASSERT_EQ(expected_ids.size(), kInputs.size());
  bool saw_byte_fallback = false;
  for (size_t i = 0; i < kInputs.size(); ++i) {
    SCOPED_TRACE(kInputs[i]);
    auto ids = tokenizer_->encode(kInputs[i], EncodeOptions{false, false});
    ASSERT_TRUE(ids.ok()) << ids.status().to_string();
    EXPECT_EQ(*ids, expected_ids[i]);
    std::string expected_text;
    std::getline(decoded_lines, expected_text);
    auto text = tokenizer_->decode(*ids, false);
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(*text, expected_text);
    for (int32_t id : *ids) {
      auto piece = tokenizer_->id_to_token(id);
      ASSERT_TRUE(piece.ok());
      saw_byte_fallback = saw_byte_fallback || piece->rfind("<0x", 0) == 0;
    }
  }
  EXPECT_TRUE(saw_byte_fallback);
}

TEST_F(SentencePieceTest, SpecialTokensAndIds) {
  auto bos = tokenizer_->bos_id();
  ASSERT_TRUE(bos.has_value());
  EXPECT_EQ(tokenizer_->token_to_id("<s>"), bos);
  EXPECT_EQ(tokenizer_->eos_ids(), std::vector<int32_t>{*tokenizer_->token_to_id("</s>")});
  EXPECT_TRUE(tokenizer_->is_special(*bos));
  EXPECT_EQ(tokenizer_->token_to_id("no such piece"), std::nullopt);
  EXPECT_EQ(tokenizer_->vocab_size(), 330);

  auto plain = tokenizer_->encode("hello", EncodeOptions{false, true});
  auto with_bos = tokenizer_->encode("hello", EncodeOptions{true, true});
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE(with_bos.ok());
  ASSERT_EQ(with_bos->size(), plain->size() + 1);
  EXPECT_EQ(with_bos->front(), *bos);
  // parse_special maps the text "<s>" to the bos id; without it "<s>" is ordinary text.
  auto parsed = tokenizer_->encode("<s>hello", EncodeOptions{false, true});
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->front(), *bos);
  auto literal = tokenizer_->encode("<s>hello", EncodeOptions{false, false});
  ASSERT_TRUE(literal.ok());
  EXPECT_EQ(std::count(literal->begin(), literal->end(), *bos), 0);

  EXPECT_EQ(*tokenizer_->decode(*with_bos, true), "hello");
  EXPECT_EQ(*tokenizer_->decode(*with_bos, false), "<s>hello");
  std::vector<int32_t> bad = {330};
  EXPECT_EQ(tokenizer_->decode(bad, false).status().code(), StatusCode::kOutOfRange);
}

TEST_F(SentencePieceTest, StreamingKeepsSpacesAndWholeCharacters) {
  std::string text = "hello world \u20AC \U0001F600 done";
  auto ids = tokenizer_->encode(text, EncodeOptions{true, true});
  ASSERT_TRUE(ids.ok());
  const tokenizer_test::Streamed streamed = tokenizer_test::stream_decode(*tokenizer_, *ids, true);
  EXPECT_EQ(streamed.text, *tokenizer_->decode(*ids, true));
  EXPECT_EQ(streamed.text, text);
  EXPECT_GT(streamed.held, 2);  // the bos and the unfinished bytes of the euro sign and the emoji
}

TEST(SentencePieceLoadTest, GarbageIsNotAModel) {
  std::vector<uint8_t> garbage = {0xFF, 0x01, 0x02, 0x03, 0x04};
  auto tokenizer = load_sentencepiece_model(garbage);
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_EQ(tokenizer.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(tokenizer.status().message().find("not a valid SentencePiece model"), std::string::npos)
      << tokenizer.status().message();
}

// Found by tests/fuzz: a model whose piece list holds an empty piece made the library throw
// while building its trie, which ended the process.
TEST(SentencePieceLoadTest, AnEmptyPieceIsRefusedNotThrown) {
  const std::vector<uint8_t> model = {0x0a, 0x0e, 0x0a, 0x05, 0x3c, 0x71, 0x6e, 0x6b, 0x3e, 0x15, 0x00, 0x00,
                                      0x00, 0x00, 0x18, 0x02, 0x0a, 0x0c, 0x0a, 0x03, 0x00, 0x00, 0x00, 0x25,
                                      0x00, 0x04, 0x00, 0x30, 0x78, 0x30, 0x30, 0x3e, 0x15, 0x00, 0x14, 0x00,
                                      0x00};
  auto tokenizer = load_sentencepiece_model(model);
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_EQ(tokenizer.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(tokenizer.status().message().find("not a valid SentencePiece model"), std::string::npos)
      << tokenizer.status().message();
}

}  // namespace
}  // namespace staticlm
