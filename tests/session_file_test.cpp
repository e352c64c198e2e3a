// SPDX-License-Identifier: Apache-2.0
// A session saved to a file and restored into another session continues exactly as the saved
// one; a file made with another program, truncated or damaged is refused, naming why, and the
// session it was to fill keeps what it held.
#include "staticlm/llm/session_file.h"

#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "staticlm/builtin/builtin_runtime.h"
#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/llm/engine.h"

#include "export_helpers.h"
#include "fixture_reference.h"

namespace staticlm {
namespace {

using testing::small_options;
using testing::temp_path;

std::unique_ptr<Engine> open_engine(const std::string& name, int64_t max_cache_len = 0) {
  const std::string path = temp_path(name);
  HfStaticExportOptions options = small_options();
  if (max_cache_len > 0) {
    options.max_cache_len = max_cache_len;
  }
  EXPECT_TRUE(export_hf_static(testing::fixture_dir("qwen3"), path, options).ok());
  auto runtime = builtin_engine_runtime();
  EXPECT_TRUE(runtime.ok());
  auto engine = Engine::open(path, {}, std::move(*runtime));
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  return engine.ok() ? std::move(*engine) : nullptr;
}

std::vector<float> decode_logits(LlmSession& session, int32_t token) {
  std::vector<float> out;
  EXPECT_TRUE(
      session.decode(token, [&](int64_t, std::span<const float> row) { out.assign(row.begin(), row.end()); }).ok());
  return out;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(SessionFileTest, ARestoredSessionContinuesExactlyAsTheSavedOne) {
  const testing::FixtureReference ref = testing::load_fixture_reference("qwen3");
  auto engine = open_engine("session_file.slm");
  ASSERT_NE(engine, nullptr);
  auto saved = engine->new_session();
  auto restored = engine->new_session();
  ASSERT_TRUE(saved.ok() && restored.ok());
  ASSERT_TRUE((*saved)->prefill(ref.prompt_tokens, nullptr, PrefillLogits::kLast).ok());
  const std::string path = temp_path("qwen3.session");
  ASSERT_TRUE(save_session_file(**saved, engine->file(), path).ok());
  // The restored session held something else: it is replaced.
  ASSERT_TRUE((*restored)->prefill(std::vector<int32_t>{7, 8, 9}, nullptr, PrefillLogits::kLast).ok());
  const Status status = restore_session_file(**restored, engine->file(), path);
  ASSERT_TRUE(status.ok()) << status.to_string();
  EXPECT_EQ((*restored)->position(), static_cast<int64_t>(ref.prompt_tokens.size()));
  EXPECT_EQ(std::vector<int32_t>((*restored)->cached_tokens().begin(), (*restored)->cached_tokens().end()),
            ref.prompt_tokens);
  // The same program, the same cache bytes: the next steps' logits are the same bits.
  for (int32_t token : {11, 12, 13}) {
    EXPECT_EQ(decode_logits(**restored, token), decode_logits(**saved, token)) << token;
  }
  // A generation that reuses the restored prefix prefills only the prompt's last token.
  GenerationOptions options = engine->default_generation();
  options.max_new_tokens = 4;
  options.eos_ids.clear();
  options.reuse_cached_prefix = true;
  ASSERT_TRUE(restore_session_file(**restored, engine->file(), path).ok());
  auto reused = generate_tokens(**restored, ref.prompt_tokens, options);
  ASSERT_TRUE(reused.ok()) << reused.status().to_string();
  EXPECT_EQ(reused->cached_prompt_tokens + 1, static_cast<int64_t>(ref.prompt_tokens.size()));
  auto fresh = engine->new_session();
  ASSERT_TRUE(fresh.ok());
  auto from_scratch = generate_tokens(**fresh, ref.prompt_tokens, options);
  ASSERT_TRUE(from_scratch.ok());
  EXPECT_EQ(reused->tokens, from_scratch->tokens);
}

TEST(SessionFileTest, AnotherProgramsOrADamagedFileIsRefusedAndChangesNothing) {
  const testing::FixtureReference ref = testing::load_fixture_reference("qwen3");
  auto engine = open_engine("session_file_a.slm");
  auto other = open_engine("session_file_b.slm", small_options().max_cache_len * 2);
  ASSERT_NE(engine, nullptr);
  ASSERT_NE(other, nullptr);
  auto session = engine->new_session();
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->prefill(ref.prompt_tokens, nullptr, PrefillLogits::kLast).ok());
  const std::string path = temp_path("qwen3_a.session");
  ASSERT_TRUE(save_session_file(**session, engine->file(), path).ok());

  auto target = other->new_session();
  ASSERT_TRUE(target.ok());
  ASSERT_TRUE((*target)->prefill(std::vector<int32_t>{4, 5}, nullptr, PrefillLogits::kLast).ok());
  auto expect_refused = [&](const std::string& file, StatusCode code, std::string_view fragment, Engine& into,
                            LlmSession& s) {
    const int64_t before = s.position();
    const Status status = restore_session_file(s, into.file(), file);
    ASSERT_FALSE(status.ok()) << fragment;
    EXPECT_EQ(status.code(), code) << status.to_string();
    EXPECT_NE(status.message().find(fragment), std::string::npos) << status.message();
    EXPECT_EQ(s.position(), before) << "nothing restored";
  };
  expect_refused(path, StatusCode::kInvalidArgument, "was saved with another program: metadata 'max_cache_len' is",
                 *other, **target);

  const std::string bytes = read_bytes(path);
  std::string flipped = bytes;
  flipped[bytes.size() / 2] = static_cast<char>(flipped[bytes.size() / 2] ^ 1);
  write_bytes(temp_path("flipped.session"), flipped);
  expect_refused(temp_path("flipped.session"), StatusCode::kDataLoss, "its checksum does not match", *engine,
                 **session);
  write_bytes(temp_path("short.session"), bytes.substr(0, bytes.size() - 100));
  expect_refused(temp_path("short.session"), StatusCode::kDataLoss, "truncated, or its sizes do not add up", *engine,
                 **session);
  write_bytes(temp_path("text.session"), std::string(200, 'x'));
  expect_refused(temp_path("text.session"), StatusCode::kDataLoss, "not a staticlm session file", *engine, **session);
  expect_refused(temp_path("absent.session"), StatusCode::kNotFound, "does not exist", *engine, **session);
}

TEST(SessionFileTest, CacheContentsThatDoNotFitAreRefused) {
  auto engine = open_engine("session_file_c.slm");
  ASSERT_NE(engine, nullptr);
  auto session = engine->new_session();
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->prefill(std::vector<int32_t>{1, 2, 3}, nullptr, PrefillLogits::kLast).ok());
  auto contents = (*session)->cache_contents();
  ASSERT_TRUE(contents.ok());
  const std::vector<int32_t> tokens{1, 2, 3};
  EXPECT_TRUE((*session)->restore_cache(tokens, *contents).ok());
  std::vector<uint8_t> shorter(contents->begin(), contents->end() - 1);
  EXPECT_EQ((*session)->restore_cache(tokens, shorter).code(), StatusCode::kInvalidArgument);
  const std::vector<int32_t> outside{1, 2, static_cast<int32_t>((*session)->vocab_size())};
  EXPECT_NE((*session)->restore_cache(outside, *contents).message().find("outside the vocabulary"), std::string::npos);
  const std::vector<int32_t> too_many(static_cast<size_t>((*session)->max_cache_len()) + 1, 1);
  EXPECT_NE((*session)->restore_cache(too_many, *contents).message().find("this program's cache"), std::string::npos);
  EXPECT_EQ((*session)->position(), 3);
}

}  // namespace
}  // namespace staticlm
