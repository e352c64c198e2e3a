// SPDX-License-Identifier: Apache-2.0
// /v1/embeddings' request parsing and response encoding, in process (the endpoint itself runs
// against a server in tests/server/test_embeddings.py): every input form, each refusal naming its
// field, and base64 against RFC 4648's encoding of the same bytes.
#include "staticlm/server/embeddings_endpoint.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "staticlm/server/completion_request.h"

namespace staticlm::server {
namespace {

std::unique_ptr<Tokenizer> fixture_tokenizer() {
  std::ifstream in(std::string(STATICLM_SOURCE_DIR) + "/tests/fixtures/llama/tokenizer.json");
  std::stringstream text;
  text << in.rdbuf();
  auto tokenizer = load_tokenizer_json(text.str(), std::nullopt);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
  return tokenizer.ok() ? std::move(*tokenizer) : nullptr;
}

EmbeddingLimits limits() {
  EmbeddingLimits out;
  out.vocab_size = 320;
  out.context_length = 16;
  out.hidden_size = 64;
  return out;
}

TEST(EmbeddingRequestTest, EveryInputFormGivesItsTokens) {
  const auto tokenizer = fixture_tokenizer();
  ASSERT_NE(tokenizer, nullptr);
  const std::vector<int32_t> text = *tokenizer->encode("hi there");
  auto one = parse_embedding_request(R"({"input": "hi there", "model": "m", "user": "u"})", *tokenizer, limits());
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  EXPECT_EQ(one->inputs, std::vector<std::vector<int32_t>>{text});
  EXPECT_FALSE(one->base64);
  auto many = parse_embedding_request(R"({"input": ["hi there", "x"], "encoding_format": "base64", "dimensions": 64})",
                                      *tokenizer, limits());
  ASSERT_TRUE(many.ok()) << many.status().to_string();
  EXPECT_EQ(many->inputs.size(), 2u);
  EXPECT_EQ(many->inputs[0], text);
  EXPECT_TRUE(many->base64);
  auto ids = parse_embedding_request(R"({"input": [1, 2, 319]})", *tokenizer, limits());
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->inputs, (std::vector<std::vector<int32_t>>{{1, 2, 319}}));
  auto id_lists = parse_embedding_request(R"({"input": [[1], [2, 3]]})", *tokenizer, limits());
  ASSERT_TRUE(id_lists.ok());
  EXPECT_EQ(id_lists->inputs, (std::vector<std::vector<int32_t>>{{1}, {2, 3}}));
}

TEST(EmbeddingRequestTest, EachRefusalNamesItsField) {
  const auto tokenizer = fixture_tokenizer();
  ASSERT_NE(tokenizer, nullptr);
  const std::pair<const char*, const char*> cases[] = {
      {R"({"input": []})", "input"},
      {R"({"input": [[]]})", "input"},
      {R"({"input": [-1]})", "input"},
      {R"({"input": [320]})", "input"},
      {R"({"input": [1.5]})", "input"},
      {R"({"input": [[1], "x", 3]})", "input"},
      {R"({"input": [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]]})", "input"},
      {R"({"input": null})", "input"},
      {R"({})", "input"},
      {R"({"input": "x", "encoding_format": "hex"})", "encoding_format"},
      {R"({"input": "x", "dimensions": 32})", "dimensions"},
      {R"({"input": "x", "user": 5})", "user"},
      {R"({"input": "x", "pooling": "mean"})", "pooling"},
  };
  for (const auto& [body, field] : cases) {
    auto parsed = parse_embedding_request(body, *tokenizer, limits());
    ASSERT_FALSE(parsed.ok()) << body;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << body;
    EXPECT_EQ(request_error_param(parsed.status()), field) << body << ": " << parsed.status().message();
  }
  std::string many = R"({"input": [)";
  for (size_t i = 0; i <= kMaxEmbeddingInputs; ++i) {
    many += i == 0 ? "[1]" : ",[1]";
  }
  many += "]}";
  EXPECT_FALSE(parse_embedding_request(many, *tokenizer, limits()).ok());
  EXPECT_FALSE(parse_embedding_request("not json", *tokenizer, limits()).ok());
}

TEST(EmbeddingResponseTest, Base64IsTheFloatsLittleEndianBytes) {
  // 1.0f is 00 00 80 3f, -2.0f is 00 00 00 c0, 0.5f is 00 00 00 3f.
  const std::vector<std::vector<float>> vectors = {{1.0f}, {1.0f, -2.0f}, {1.0f, -2.0f, 0.5f}};
  const Json encoded = embedding_response_json(vectors, true, "m", 7);
  EXPECT_EQ(encoded["data"][0]["embedding"], "AACAPw==");
  EXPECT_EQ(encoded["data"][1]["embedding"], "AACAPwAAAMA=");
  EXPECT_EQ(encoded["data"][2]["embedding"], "AACAPwAAAMAAAAA/");
  const Json plain = embedding_response_json(vectors, false, "m", 7);
  EXPECT_EQ(plain["data"][2]["embedding"], Json::array({1.0, -2.0, 0.5}));
  EXPECT_EQ(plain["data"][1]["index"], 1);
  EXPECT_EQ(plain["object"], "list");
  EXPECT_EQ(plain["usage"]["prompt_tokens"], 7);
  EXPECT_EQ(plain["usage"]["total_tokens"], 7);
}

}  // namespace
}  // namespace staticlm::server
