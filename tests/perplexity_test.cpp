// SPDX-License-Identifier: Apache-2.0
// Perplexity (llm/perplexity.h): one window over a fixture's prompt equals the perplexity of
// PyTorch's reference logits; sliding windows score every token once, each with its own window's
// context, as fresh sessions fed window by window compute it; a program that returns only the last
// position's logits gives the same through decode; bad windows and texts are refused by name.
#include "staticlm/llm/perplexity.h"

#include <cmath>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/exporter/hf_static_export.h"

#include "export_helpers.h"
#include "fixture_reference.h"
#include "session_helper.h"

namespace staticlm {
namespace {

using testing::small_options;
using testing::temp_path;

double nll(std::span<const float> row, int32_t target) {
  double largest = -INFINITY;
  for (float v : row) largest = std::max(largest, static_cast<double>(v));
  double sum = 0.0;
  for (float v : row) sum += std::exp(v - largest);
  return largest + std::log(sum) - row[static_cast<size_t>(target)];
}

TEST(PerplexityTest, OneWindowEqualsThePerplexityOfThePyTorchReference) {
  for (const std::string family : {"llama", "qwen3"}) {
    SCOPED_TRACE(family);
    const testing::FixtureReference ref = testing::load_fixture_reference(family);
    const std::string path = temp_path("perplexity_" + family + ".slm");
    ASSERT_TRUE(export_hf_static(ref.dir, path, small_options()).ok());
    auto opened = testing::open_test_session(path);
    ASSERT_TRUE(opened.ok()) << opened.status().to_string();
    const auto n = static_cast<int64_t>(ref.prompt_tokens.size());
    PerplexityOptions options;
    options.ctx = n;
    options.stride = n;
    auto result = compute_perplexity(*opened->session, ref.prompt_tokens, options);
    ASSERT_TRUE(result.ok()) << result.status().to_string();
    double sum = 0.0;
    for (int64_t i = 0; i + 1 < n; ++i) {
      const std::span<const float> row(ref.logits.data() + i * ref.vocab, static_cast<size_t>(ref.vocab));
      sum += nll(row, ref.prompt_tokens[static_cast<size_t>(i + 1)]);
    }
    EXPECT_EQ(result->scored_tokens, n - 1);
    EXPECT_EQ(result->windows, 1);
    EXPECT_NEAR(result->perplexity, std::exp(sum / static_cast<double>(n - 1)), 1e-4 * result->perplexity);
    EXPECT_GT(result->standard_error, 0.0);
  }
}

TEST(PerplexityTest, SlidingWindowsScoreEachTokenOnceWithTheirOwnContext) {
  const testing::FixtureReference ref = testing::load_fixture_reference("llama3");
  const std::string path = temp_path("perplexity_sliding.slm");
  ASSERT_TRUE(export_hf_static(ref.dir, path, small_options()).ok());
  auto opened = testing::open_test_session(path);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  LlmSession& session = *opened->session;
  std::mt19937 rng(9);
  std::vector<int32_t> tokens(45);
  for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(ref.vocab));
  PerplexityOptions options;
  options.ctx = 16;
  options.stride = 6;
  int64_t progress_calls = 0;
  options.progress = [&](int64_t done, int64_t windows, double) {
    ++progress_calls;
    EXPECT_EQ(done, progress_calls);
    EXPECT_EQ(windows, 6);  // starts 0, 6, ..., 30: the window from 30 reaches the end (45)
  };
  auto result = compute_perplexity(session, tokens, options);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->windows, 6);
  EXPECT_EQ(progress_calls, 6);
  EXPECT_EQ(result->scored_tokens, 44);

  // The same by hand: window by window from an empty cache, each token scored by the first window
  // that holds it with at least one token before it.
  std::set<int64_t> scored;
  double sum = 0.0;
  for (int64_t begin = 0; begin < 45; begin += 6) {
    const int64_t end = std::min<int64_t>(45, begin + 16);
    session.reset();
    std::vector<std::vector<float>> rows;
    ASSERT_TRUE(session
                    .prefill(std::span(tokens).subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin)),
                             [&](int64_t, std::span<const float> row) { rows.emplace_back(row.begin(), row.end()); })
                    .ok());
    for (int64_t target = begin + 1; target < end; ++target) {
      if (scored.insert(target).second) {
        sum += nll(rows[static_cast<size_t>(target - begin - 1)], tokens[static_cast<size_t>(target)]);
      }
    }
    if (end == 45) break;
  }
  EXPECT_EQ(scored.size(), 44u);
  EXPECT_NEAR(result->perplexity, std::exp(sum / 44.0), 1e-9 * result->perplexity);

  // A program whose prefill returns only the last position feeds a token at a time: the same.
  HfStaticExportOptions last = small_options();
  last.logits = LogitsMode::kLast;
  const std::string last_path = temp_path("perplexity_last.slm");
  ASSERT_TRUE(export_hf_static(ref.dir, last_path, last).ok());
  auto last_session = testing::open_test_session(last_path);
  ASSERT_TRUE(last_session.ok()) << last_session.status().to_string();
  ASSERT_FALSE(last_session->session->prefill_returns_all_logits());
  options.progress = nullptr;
  auto by_decode = compute_perplexity(*last_session->session, tokens, options);
  ASSERT_TRUE(by_decode.ok()) << by_decode.status().to_string();
  EXPECT_NEAR(by_decode->perplexity, result->perplexity, 1e-4 * result->perplexity);
}

TEST(PerplexityTest, RefusesWindowsAndTextsItCannotScore) {
  const testing::FixtureReference ref = testing::load_fixture_reference("llama");
  const std::string path = temp_path("perplexity_refusals.slm");
  ASSERT_TRUE(export_hf_static(ref.dir, path, small_options()).ok());
  auto opened = testing::open_test_session(path);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  const std::vector<int32_t> tokens = {1, 5, 9, 12};
  auto expect = [&](int64_t ctx, int64_t stride, std::span<const int32_t> text, std::string_view message) {
    PerplexityOptions options;
    options.ctx = ctx;
    options.stride = stride;
    auto refused = compute_perplexity(*opened->session, text, options);
    ASSERT_FALSE(refused.ok()) << message;
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(refused.status().message().find(message), std::string::npos) << refused.status().message();
  };
  expect(65, 8, tokens, "the window length 'ctx' must be in [2, 64] (the program's max_cache_len), found 65");
  expect(1, 1, tokens, "found 1");
  expect(16, 0, tokens, "the step 'stride' must be in [1, 16] (at most the window length), found 0");
  expect(16, 17, tokens, "found 17");
  expect(16, 8, std::span(tokens).first(1), "the text has 1 token; scoring needs at least two");
  const std::vector<int32_t> outside = {1, static_cast<int32_t>(ref.vocab)};
  expect(16, 8, outside, str_cat("token id ", ref.vocab, " is outside the vocabulary"));
}

}  // namespace
}  // namespace staticlm
