// SPDX-License-Identifier: Apache-2.0
// The embeddings method (docs/embeddings.md) through LlmSession: it writes the caches exactly as
// prefill does (a decode after it gives prefill's logits, in both KV update forms), its hidden
// states do not depend on where the chunks fall, a program whose method and metadata disagree is
// refused by the validator, and bad calls are refused without touching the session. Numerics
// against the PyTorch reference are python/tests/test_embeddings.py's.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "staticlm/backends/cpu/export/cpu_backend.h"
#include "staticlm/contracts/hf_static_v1_spec.h"
#include "staticlm/format/program_writer.h"
#include "staticlm/llm/embedding.h"

#include "export_helpers.h"
#include "fixture_reference.h"
#include "session_helper.h"

namespace staticlm {
namespace {

using testing::fixture_dir;
using testing::open_test_session;
using testing::small_options;
using testing::temp_path;

// The fixture exported on the portable kernels (no backend), with an embeddings method.
std::string export_embeddings(const std::string& name, HfStaticExportOptions options = small_options()) {
  options.embedding_pooling = "mean";
  const std::string path = temp_path(name);
  auto exported = export_hf_static(fixture_dir("llama"), path, options);
  EXPECT_TRUE(exported.ok()) << exported.status().to_string();
  return path;
}

std::vector<int32_t> prompt() {
  return testing::load_fixture_reference("llama").prompt_tokens;  // 20 tokens: chunks of 8, 8 and 4
}

std::vector<float> hidden_rows(LlmSession& session, std::span<const int32_t> tokens) {
  const auto width = static_cast<size_t>(session.hidden_size());
  std::vector<float> rows(tokens.size() * width, std::nanf(""));
  Status status = session.embed(tokens, [&](int64_t index, std::span<const float> row) {
    std::copy(row.begin(), row.end(), rows.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(index) * width));
  });
  EXPECT_TRUE(status.ok()) << status.to_string();
  return rows;
}

std::vector<float> decode_logits(LlmSession& session, int32_t token) {
  std::vector<float> logits;
  Status status =
      session.decode(token, [&](int64_t, std::span<const float> row) { logits.assign(row.begin(), row.end()); });
  EXPECT_TRUE(status.ok()) << status.to_string();
  return logits;
}

class EmbeddingsCacheTest : public ::testing::TestWithParam<KvUpdateForm> {};

TEST_P(EmbeddingsCacheTest, ADecodeAfterAnEmbedGivesPrefillsLogits) {
  HfStaticExportOptions options = small_options();
  options.kv_update = GetParam();
  const std::string path = export_embeddings(str_cat("cache_", kv_update_form_name(GetParam()), ".slm"), options);
  auto embedded = open_test_session(path);
  auto prefilled = open_test_session(path);
  ASSERT_TRUE(embedded.ok() && prefilled.ok()) << embedded.status().to_string();
  const std::vector<int32_t> tokens = prompt();
  const auto head = std::span(tokens).first(tokens.size() - 1);
  hidden_rows(*embedded->session, head);
  ASSERT_TRUE(prefilled->session->prefill(head, {}).ok());
  EXPECT_EQ(embedded->session->position(), static_cast<int64_t>(head.size()));
  EXPECT_TRUE(std::ranges::equal(embedded->session->cached_tokens(), head));
  // The same kernels wrote the same rows: the next token's logits are equal to the bit.
  EXPECT_EQ(decode_logits(*embedded->session, tokens.back()), decode_logits(*prefilled->session, tokens.back()));
}

INSTANTIATE_TEST_SUITE_P(KvForms, EmbeddingsCacheTest,
                         ::testing::Values(KvUpdateForm::kInPlace, KvUpdateForm::kReturned), [](const auto& test_info) {
                           return test_info.param == KvUpdateForm::kInPlace ? "InPlace" : "Returned";
                         });

TEST(EmbeddingsTest, HiddenStatesDoNotDependOnWhereTheChunksFall) {
  HfStaticExportOptions one_chunk = small_options();
  one_chunk.prefill_len = 32;
  auto chunked = open_test_session(export_embeddings("chunks_8.slm"));
  auto whole = open_test_session(export_embeddings("chunks_32.slm", one_chunk));
  ASSERT_TRUE(chunked.ok() && whole.ok());
  const std::vector<int32_t> tokens = prompt();
  const std::vector<float> a = hidden_rows(*chunked->session, tokens);
  const std::vector<float> b = hidden_rows(*whole->session, tokens);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], 1e-5) << "element " << i;
  }
  // Embedding again from an empty cache gives the same rows; pooled, their mean and last row.
  auto mean = embed_tokens(*chunked->session, tokens, {});
  auto last = embed_tokens(*chunked->session, tokens, {Pooling::kLast, true});
  ASSERT_TRUE(mean.ok() && last.ok());
  const auto width = static_cast<size_t>(chunked->session->hidden_size());
  double squares = 0.0;
  for (size_t i = 0; i < width; ++i) {
    double sum = 0.0;
    for (size_t row = 0; row < tokens.size(); ++row) {
      sum += a[row * width + i];
    }
    EXPECT_NEAR((*mean)[i], sum / static_cast<double>(tokens.size()), 1e-6);
    squares += static_cast<double>(a[(tokens.size() - 1) * width + i]) * a[(tokens.size() - 1) * width + i];
  }
  for (size_t i = 0; i < width; ++i) {
    EXPECT_NEAR((*last)[i], a[(tokens.size() - 1) * width + i] / std::sqrt(squares), 1e-6);
  }
}

TEST(EmbeddingsTest, BadCallsAreRefusedAndLeaveTheSessionAsItWas) {
  auto plain_path = temp_path("no_embeddings.slm");
  ASSERT_TRUE(export_hf_static(fixture_dir("llama"), plain_path, small_options()).ok());
  auto plain = open_test_session(plain_path);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->session->embedding_pooling().empty());
  const std::vector<int32_t> tokens = prompt();
  Status status = plain->session->embed(tokens, {});
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("export it with --embeddings mean|last"), std::string::npos) << status.message();
  EXPECT_EQ(embed_tokens(*plain->session, tokens, {}).status().code(), StatusCode::kFailedPrecondition);

  auto opened = open_test_session(export_embeddings("refusals.slm"));
  ASSERT_TRUE(opened.ok());
  LlmSession& session = *opened->session;
  EXPECT_EQ(session.embedding_pooling(), "mean");
  ASSERT_TRUE(session.prefill(std::span(tokens).first(5), {}).ok());
  EXPECT_EQ(embed_tokens(session, {}, {}).status().code(), StatusCode::kInvalidArgument);
  const std::vector<int32_t> too_long(65, 7);  // the cache holds 64
  EXPECT_EQ(session.embed(too_long, {}).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(session.position(), 5);
  // embed_tokens starts from an empty cache, and still refuses before it empties this one.
  EXPECT_EQ(embed_tokens(session, too_long, {}).status().code(), StatusCode::kOutOfRange);
  const std::vector<int32_t> outside = {1, 320};
  EXPECT_EQ(embed_tokens(session, outside, {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(session.position(), 5);
  EXPECT_FALSE(parse_pooling("cls").ok());
  // Pooling none: every token's row, each normalised when asked.
  auto rows = embed_tokens(session, std::span(tokens).first(3), {Pooling::kNone, true});
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 3 * static_cast<size_t>(session.hidden_size()));
  for (size_t row = 0; row < 3; ++row) {
    double squares = 0.0;
    for (size_t i = 0; i < static_cast<size_t>(session.hidden_size()); ++i) {
      squares += static_cast<double>((*rows)[row * static_cast<size_t>(session.hidden_size()) + i]) *
                 (*rows)[row * static_cast<size_t>(session.hidden_size()) + i];
    }
    EXPECT_NEAR(squares, 1.0, 1e-5);
  }
}

// On the cpu backend, a tied table (llama3's) is stored once for every method: the embeddings
// method, which has no head, gathers from what the head's format stored, as prefill does, so the
// method adds no weights to the file and its cache writes are prefill's even when the head is
// quantized.
TEST(EmbeddingsTest, ATiedTableIsSharedWithTheMethodsThatHaveTheHead) {
  auto created = CpuBackend::create();
  ASSERT_TRUE(created.ok());
  const std::shared_ptr<CpuBackend> backend = *created;
  for (const char* head : {"weight_dtype", "int8"}) {
    SCOPED_TRACE(head);
    HfStaticExportOptions options = small_options();
    options.backend = backend.get();
    options.backend_options = testing::text_options({{"lm_head_dtype", head}});
    const std::string plain = temp_path(str_cat("tied_plain_", head, ".slm"));
    ASSERT_TRUE(export_hf_static(fixture_dir("llama3"), plain, options).ok());
    options.embedding_pooling = "mean";
    const std::string embedded = temp_path(str_cat("tied_embeddings_", head, ".slm"));
    auto exported = export_hf_static(fixture_dir("llama3"), embedded, options);
    ASSERT_TRUE(exported.ok()) << exported.status().to_string();
    // The table alone is 320 x 64 f32 = 80 KiB; the method's graph and delegate are a few KiB.
    EXPECT_LT(std::filesystem::file_size(embedded), std::filesystem::file_size(plain) + 16 * 1024);

    auto by_embed = open_test_session(embedded);
    auto by_prefill = open_test_session(embedded);
    ASSERT_TRUE(by_embed.ok() && by_prefill.ok()) << by_embed.status().to_string();
    const std::vector<int32_t> tokens = testing::load_fixture_reference("llama3").prompt_tokens;
    const auto head_tokens = std::span(tokens).first(tokens.size() - 1);
    hidden_rows(*by_embed->session, head_tokens);
    ASSERT_TRUE(by_prefill->session->prefill(head_tokens, {}).ok());
    EXPECT_EQ(decode_logits(*by_embed->session, tokens.back()), decode_logits(*by_prefill->session, tokens.back()));
  }
}

// A program edited after export and opened; the validator's refusal.
Status open_edited(const std::string& name, const std::function<void(ProgramSpec&)>& edit) {
  HfStaticExportOptions options = small_options();
  options.embedding_pooling = "last";
  auto build = build_hf_static(fixture_dir("llama"), options);
  if (!build.ok()) {
    return build.status();
  }
  edit(build->spec);
  const std::string path = temp_path(name);
  STATICLM_RETURN_IF_ERROR(write_program(build->spec, path).status());
  return open_test_session(path).status();
}

TEST(EmbeddingsTest, TheMethodAndItsMetadataMustAgree) {
  Status without_key = open_edited("method_without_key.slm", [](ProgramSpec& spec) {
    std::erase_if(spec.metadata,
                  [](const MetadataSpec& entry) { return entry.key == hf_static_v1::key::kEmbeddingPooling; });
  });
  EXPECT_EQ(without_key.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(without_key.message().find("method 'embeddings' needs metadata 'embedding_pooling'"), std::string::npos)
      << without_key.message();

  Status without_method = open_edited("key_without_method.slm", [](ProgramSpec& spec) {
    std::erase_if(spec.methods, [](const MethodSpec& method) { return method.name == hf_static_v1::kEmbeddings; });
  });
  EXPECT_EQ(without_method.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(without_method.message().find("describes an embeddings method, and the program has none"),
            std::string::npos)
      << without_method.message();

  Status unknown_pooling = open_edited("unknown_pooling.slm", [](ProgramSpec& spec) {
    for (MetadataSpec& entry : spec.metadata) {
      if (entry.key == hf_static_v1::key::kEmbeddingPooling) {
        entry.value = std::string("cls");
      }
    }
  });
  EXPECT_EQ(unknown_pooling.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown_pooling.message().find("expected one of mean, last, found 'cls'"), std::string::npos)
      << unknown_pooling.message();
}

}  // namespace
}  // namespace staticlm
