// SPDX-License-Identifier: Apache-2.0
// Malformed and unsupported tokenizer.json files: each is refused with a message that names the
// component and what was wrong.
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "staticlm/llm/tokenizer/tokenizer.h"
#include "staticlm/llm/tokenizer/tokenizer_test_docs.h"

namespace staticlm {
namespace {

using tokenizer_test::abc_document;

Status load_status(const nlohmann::json& document, std::optional<std::string> config = std::nullopt) {
  std::string text = document.dump();
  auto tokenizer = load_tokenizer_json(text, config ? std::optional<std::string_view>(*config) : std::nullopt);
  return tokenizer.ok() ? ok_status() : tokenizer.status();
}

void expect_error(const Status& status, StatusCode code, const std::string& fragment) {
  EXPECT_EQ(status.code(), code) << status.to_string();
  EXPECT_NE(status.message().find(fragment), std::string::npos) << "message: " << status.message();
}

TEST(HfComponentsTest, TheBaseDocumentLoads) {
  EXPECT_TRUE(load_status(abc_document()).ok());
}

TEST(HfComponentsTest, MalformedJsonNamesTheFileAndPosition) {
  auto tokenizer = load_tokenizer_json("{\"model\": {\"type\": ", std::nullopt);
  ASSERT_FALSE(tokenizer.ok());
  expect_error(tokenizer.status(), StatusCode::kInvalidArgument, "tokenizer.json: malformed JSON at byte");
  auto array = load_tokenizer_json("[1, 2]", std::nullopt);
  ASSERT_FALSE(array.ok());
  expect_error(array.status(), StatusCode::kInvalidArgument, "tokenizer.json: expected a JSON object at the top level");
  auto config = load_tokenizer_json(abc_document().dump(), std::string_view("{oops"));
  ASSERT_FALSE(config.ok());
  expect_error(config.status(), StatusCode::kInvalidArgument, "tokenizer_config.json: malformed JSON");
}

TEST(HfComponentsTest, UnsupportedTypesAreNamedWithTheSupportedOnes) {
  auto document = abc_document();
  document["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_error(load_status(document), StatusCode::kUnimplemented,
               "tokenizer.json: pre_tokenizer type 'Whitespace' is not supported (supported: ByteLevel, Split, "
               "Metaspace, Digits, Sequence)");

  document = abc_document();
  document["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "BertNormalizer"}}}}};
  expect_error(load_status(document), StatusCode::kUnimplemented,
               "tokenizer.json: normalizer.normalizers[1] type 'BertNormalizer' is not supported (supported: NFC");

  document = abc_document();
  document["decoder"] = {{"type", "WordPiece"}};
  expect_error(load_status(document), StatusCode::kUnimplemented,
               "decoder type 'WordPiece' is not supported (supported: ByteLevel, Metaspace");

  document = abc_document();
  document["post_processor"] = {{"type", "Mystery"}};
  expect_error(load_status(document), StatusCode::kUnimplemented, "post_processor type 'Mystery' is not supported");

  document = abc_document();
  document["model"]["type"] = "Unigram";
  expect_error(load_status(document), StatusCode::kUnimplemented,
               "tokenizer.json: model type 'Unigram' is not supported (supported: BPE)");

  document = abc_document();
  document["model"]["dropout"] = 0.1;
  expect_error(load_status(document), StatusCode::kUnimplemented, "model.dropout: BPE dropout (0.1)");
}

TEST(HfComponentsTest, MalformedComponentsNameTheField) {
  auto document = abc_document();
  document.erase("model");
  expect_error(load_status(document), StatusCode::kInvalidArgument,
               "tokenizer.json: model: required object is missing");

  document = abc_document();
  document["pre_tokenizer"] = nlohmann::json::object();
  expect_error(load_status(document), StatusCode::kInvalidArgument, "pre_tokenizer: expected a string \"type\" member");

  document = abc_document();
  document["model"]["merges"] = {"a b", "a zz"};
  expect_error(load_status(document), StatusCode::kInvalidArgument,
               "model.merges[1]: token 'zz' is not in the vocabulary");

  document = abc_document();
  document["model"]["merges"] = {"a b c"};
  expect_error(load_status(document), StatusCode::kInvalidArgument, "model.merges[0]: expected \"left right\"");

  document = abc_document();
  document["model"]["merges"] =
      nlohmann::json::array({nlohmann::json::array({"b", "c"}), nlohmann::json::array({"a", "c"})});
  expect_error(load_status(document), StatusCode::kInvalidArgument,
               "model.merges[1]: merged token 'ac' is not in the vocabulary");

  document = abc_document();
  document["model"]["vocab"]["d"] = -4;
  expect_error(load_status(document), StatusCode::kInvalidArgument, "model.vocab[\"d\"]: expected an id in [0, ");

  document = abc_document();
  document["model"]["unk_token"] = "<unk>";
  expect_error(load_status(document), StatusCode::kInvalidArgument,
               "model.unk_token: '<unk>' is not in the vocabulary");

  document = abc_document();
  document["model"]["byte_fallback"] = "yes";
  expect_error(load_status(document), StatusCode::kInvalidArgument,
               "model.byte_fallback: expected true or false, found \"yes\"");

  document = abc_document();
  document["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  expect_error(load_status(document), StatusCode::kInvalidArgument,
               "pre_tokenizer.pattern: regex '(unclosed' does not compile at offset");

  document = abc_document();
  document["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", "b"}}}, {"behavior", "Sideways"}};
  expect_error(load_status(document), StatusCode::kInvalidArgument,
               "pre_tokenizer.behavior: 'Sideways' is not one of Removed, Isolated");

  document = abc_document();
  document["added_tokens"] = {{{"id", 9}, {"special", true}}};
  expect_error(load_status(document), StatusCode::kInvalidArgument,
               "added_tokens[0].content: required string is missing");

  document = abc_document();
  document["post_processor"] = {{"type", "TemplateProcessing"},
                                {"single", {{{"SpecialToken", {{"id", "<s>"}}}}, {{"Sequence", {{"id", "A"}}}}}},
                                {"special_tokens", nlohmann::json::object()}};
  expect_error(load_status(document), StatusCode::kInvalidArgument,
               "post_processor: the template uses special token '<s>' that special_tokens does not define");

  document = abc_document();
  document["decoder"] = {{"type", "Strip"}, {"content", "ab"}, {"start", 1}, {"stop", 0}};
  expect_error(load_status(document), StatusCode::kInvalidArgument,
               "decoder.content: expected exactly one character, found \"ab\"");
}

TEST(HfComponentsTest, ConfigTokensMustExist) {
  expect_error(load_status(abc_document(), std::string(R"({"bos_token": "<s>"})")), StatusCode::kInvalidArgument,
               "tokenizer_config.json: bos_token: token '<s>' is neither an added token nor in the vocabulary");
  expect_error(load_status(abc_document(), std::string(R"({"eos_token": 7})")), StatusCode::kInvalidArgument,
               "tokenizer_config.json: eos_token: expected a token string");
  EXPECT_TRUE(load_status(abc_document(), std::string(R"({"bos_token": {"content": "a"}, "eos_token": null})")).ok());
}

TEST(HfComponentsTest, DirectoryLoadsTokenizerJsonWithItsConfig) {
  char pattern[] = "/tmp/staticlm_tokdir_XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  std::filesystem::path dir = pattern;
  std::ofstream(dir / "tokenizer.json") << abc_document().dump();
  std::ofstream(dir / "tokenizer_config.json") << R"({"bos_token": "c", "eos_token": "ab"})";
  auto tokenizer = load_tokenizer_from_dir(dir.string());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
  EXPECT_EQ((*tokenizer)->bos_id(), std::optional<int32_t>(2));
  EXPECT_EQ((*tokenizer)->eos_ids(), std::vector<int32_t>{3});
  std::ofstream(dir / "tokenizer_config.json") << R"({"eos_token": "nope"})";
  auto broken = load_tokenizer_from_dir(dir.string());
  ASSERT_FALSE(broken.ok());
  expect_error(broken.status(), StatusCode::kInvalidArgument, dir.string() + ": tokenizer_config.json: eos_token");
  std::filesystem::remove_all(dir);
}

TEST(HfComponentsTest, DirectoryWithoutTokenizerFilesIsNotFound) {
  auto tokenizer = load_tokenizer_from_dir(std::string(STATICLM_SOURCE_DIR) + "/docs");
  ASSERT_FALSE(tokenizer.ok());
  expect_error(tokenizer.status(), StatusCode::kNotFound, "no tokenizer.json or tokenizer.model");
}

}  // namespace
}  // namespace staticlm
