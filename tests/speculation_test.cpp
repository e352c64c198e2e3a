// SPDX-License-Identifier: Apache-2.0
// Speculative decoding gives the tokens plain decoding gives. On the portable kernels a chunk's
// row and a decode step compute a token's logits in the same order, so the tokens must be equal
// exactly, greedy and seeded sampling alike, for every proposer, draft length, chunk boundary and
// KV form; guesses always wrong or always right, an end of sequence or a stop string inside a run
// of kept guesses and a cache filling mid-guess change nothing. On the native kernels the orders
// differ (docs/speculative_decoding.md gives the bound): there the sampled distribution is checked
// against plain decoding's by a chi-square test. Refusals name what is wrong.
#include "staticlm/llm/speculation.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/backends/cpu/export/cpu_backend.h"
#include "staticlm/builtin/builtin_runtime.h"
#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/llm/engine.h"

#include "export_helpers.h"
#include "fixture_reference.h"

namespace staticlm {
namespace {

using testing::temp_path;

const std::string kModel = std::string(STATICLM_SOURCE_DIR) + "/models/kjv-llama-6m";

// A verse and its opening again: prompt lookup finds what follows.
constexpr std::string_view kPrompt =
    "And God said, Let there be light: and there was light. And God saw the light, that it was good: and God "
    "divided the light from the darkness. And God said, Let there be";

struct Shape {
  std::string name;
  int64_t prefill_len = 64;
  int64_t max_cache_len = 256;
  bool kv_returned = false;
  bool logits_last = false;
};

// On the cpu backend (its native kernels), or with every node on the portable kernels.
std::unique_ptr<Engine> open_bundled(const Shape& shape, bool portable) {
  const std::string path = temp_path("speculation_" + shape.name + (portable ? "_portable" : "_cpu") + ".slm");
  static std::set<std::string> exported_once;
  if (exported_once.insert(path).second) {
    static const std::shared_ptr<CpuBackend> backend = CpuBackend::create().value();
    HfStaticExportOptions options;
    options.prefill_len = shape.prefill_len;
    options.max_cache_len = shape.max_cache_len;
    options.kv_update = shape.kv_returned ? KvUpdateForm::kReturned : KvUpdateForm::kInPlace;
    options.logits = shape.logits_last ? LogitsMode::kLast : LogitsMode::kAll;
    options.backend = portable ? nullptr : backend.get();
    const Status exported = export_hf_static(kModel, path, options).status();
    EXPECT_TRUE(exported.ok()) << exported.to_string();
  }
  auto runtime = builtin_engine_runtime();
  EXPECT_TRUE(runtime.ok());
  auto engine = Engine::open(path, {}, std::move(*runtime));
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  return engine.ok() ? std::move(*engine) : nullptr;
}

std::vector<int32_t> encode(const Engine& engine, std::string_view text) {
  auto tokenizer = engine.tokenizer();
  EXPECT_TRUE(tokenizer.ok());
  auto tokens = (*tokenizer)->encode(text, EncodeOptions{});
  EXPECT_TRUE(tokens.ok());
  return tokens.ok() ? *tokens : std::vector<int32_t>{};
}

GenerationResult generate(const Engine& engine, std::span<const int32_t> prompt, const GenerationOptions& options) {
  auto session = engine.new_session();
  EXPECT_TRUE(session.ok());
  auto result = generate_tokens(**session, prompt, options);
  EXPECT_TRUE(result.ok()) << result.status().to_string();
  return result.ok() ? std::move(*result) : GenerationResult{};
}

// Guesses the text a plain run generated after `prompt_len` tokens, each shifted by `shift`
// (0: always right; 1: always wrong).
class Oracle final : public Proposer {
 public:
  Oracle(std::vector<int32_t> continuation, size_t prompt_len, int32_t shift, int32_t vocab)
      : continuation_(std::move(continuation)), prompt_len_(prompt_len), shift_(shift), vocab_(vocab) {}

  Status propose(std::span<const int32_t> text, int64_t max_tokens, int64_t, std::vector<int32_t>& out) override {
    for (size_t at = text.size() - prompt_len_;
         at < continuation_.size() && static_cast<int64_t>(out.size()) < max_tokens; ++at) {
      out.push_back((continuation_[at] + shift_) % vocab_);
    }
    return ok_status();
  }

 private:
  std::vector<int32_t> continuation_;
  size_t prompt_len_;
  int32_t shift_;
  int32_t vocab_;
};

int32_t vocab_of(const Engine& engine) {
  auto session = engine.new_session();
  EXPECT_TRUE(session.ok());
  return session.ok() ? static_cast<int32_t>((*session)->vocab_size()) : 1;
}

GenerationOptions greedy(int64_t max_new_tokens) {
  GenerationOptions options;
  options.max_new_tokens = max_new_tokens;
  return options;
}

TEST(SpeculationTest, GreedyTokensAreThoseOfPlainDecodingForEveryProposerLengthAndKvForm) {
  // Chunks of 4 make a check of up to 16 guesses span several prefill calls.
  for (const Shape& shape : {Shape{"inplace", 64, 256, false}, Shape{"returned_chunk4", 4, 256, true}}) {
    SCOPED_TRACE(shape.name);
    auto engine = open_bundled(shape, /*portable=*/true);
    ASSERT_NE(engine, nullptr);
    const std::vector<int32_t> prompt = encode(*engine, kPrompt);
    const GenerationResult plain = generate(*engine, prompt, greedy(40));
    ASSERT_EQ(plain.tokens.size(), 40u);
    auto draft = engine->new_session();
    ASSERT_TRUE(draft.ok());
    for (int draft_max : shape.kv_returned ? std::vector<int>{16} : std::vector<int>{1, 3, 16}) {
      GenerationOptions lookup = greedy(40);
      lookup.speculation.lookup_ngram = 3;
      lookup.speculation.draft_max = draft_max;
      const GenerationResult looked = generate(*engine, prompt, lookup);
      EXPECT_EQ(looked.tokens, plain.tokens) << "lookup, draft_max " << draft_max;
      EXPECT_GT(looked.speculation.accepted, 0) << "the verse repeats: some guesses are kept";
      EXPECT_EQ(looked.decode_steps, plain.decode_steps);

      // The target itself as its draft: every guess it makes is kept.
      GenerationOptions drafted = greedy(40);
      drafted.speculation.draft = draft->get();
      drafted.speculation.draft_max = draft_max;
      drafted.speculation.draft_p_min = 0.0f;
      const GenerationResult by_draft = generate(*engine, prompt, drafted);
      EXPECT_EQ(by_draft.tokens, plain.tokens) << "draft, draft_max " << draft_max;
      EXPECT_EQ(by_draft.speculation.accepted, by_draft.speculation.drafted);
      EXPECT_GT(by_draft.speculation.accepted, 0);
    }
  }
}

TEST(SpeculationTest, SeededSamplingDrawsTheSameTokens) {
  auto engine = open_bundled({"inplace", 64, 256, false}, /*portable=*/true);
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> prompt = encode(*engine, kPrompt);
  for (uint64_t seed : {1u, 2u}) {
    GenerationOptions options = greedy(24);
    options.sampling.temperature = 0.7f;
    options.sampling.seed = seed;
    const GenerationResult plain = generate(*engine, prompt, options);
    options.speculation.lookup_ngram = 2;
    const GenerationResult looked = generate(*engine, prompt, options);
    EXPECT_EQ(looked.tokens, plain.tokens) << "seed " << seed;
  }
}

TEST(SpeculationTest, GuessesAlwaysWrongChangeNothingAndStopBeingChecked) {
  auto engine = open_bundled({"inplace", 64, 256, false}, /*portable=*/true);
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> prompt = encode(*engine, kPrompt);
  const GenerationResult plain = generate(*engine, prompt, greedy(64));
  Oracle wrong(plain.tokens, prompt.size(), 1, vocab_of(*engine));
  GenerationOptions options = greedy(64);
  options.speculation.proposer = &wrong;
  const GenerationResult guessed = generate(*engine, prompt, options);
  EXPECT_EQ(guessed.tokens, plain.tokens);
  EXPECT_EQ(guessed.speculation.accepted, 0);
  // Fruitless checks pause guessing (the share of guesses kept below 0.15); it is tried again less
  // and less often.
  EXPECT_GT(guessed.speculation.checks, 0);
  EXPECT_LT(guessed.speculation.checks, plain.decode_steps / 3);
}

TEST(SpeculationTest, GuessesAlwaysRightAreKeptInRunsOfTheLongestLength) {
  auto engine = open_bundled({"inplace", 64, 256, false}, /*portable=*/true);
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> prompt = encode(*engine, kPrompt);
  const GenerationResult plain = generate(*engine, prompt, greedy(64));
  Oracle right(plain.tokens, prompt.size(), 0, vocab_of(*engine));
  GenerationOptions options = greedy(64);
  options.speculation.proposer = &right;
  options.speculation.draft_max = 8;
  const GenerationResult guessed = generate(*engine, prompt, options);
  EXPECT_EQ(guessed.tokens, plain.tokens);
  EXPECT_EQ(guessed.speculation.accepted, guessed.speculation.drafted);
  // 63 tokens after the first: the length grows 2, 4, 6, then stays 8, so checks take 3, 5, 7,
  // then 9 tokens each.
  EXPECT_LE(guessed.speculation.checks, 3 + (63 - 15 + 8) / 9);
}

TEST(SpeculationTest, EndOfSequenceAndStopStringsInsideAKeptRunEndAsPlainDecoding) {
  auto engine = open_bundled({"inplace", 64, 256, false}, /*portable=*/true);
  ASSERT_NE(engine, nullptr);
  auto tokenizer = engine->tokenizer();
  ASSERT_TRUE(tokenizer.ok());
  const std::vector<int32_t> prompt = encode(*engine, kPrompt);
  const GenerationResult full = generate(*engine, prompt, greedy(40));
  Oracle right(full.tokens, prompt.size(), 0, vocab_of(*engine));

  // An end-of-sequence id first generated at step 20 or later, inside a check of 8 guesses.
  size_t at = 20;
  while (std::find(full.tokens.begin(), full.tokens.begin() + static_cast<ptrdiff_t>(at), full.tokens[at]) !=
         full.tokens.begin() + static_cast<ptrdiff_t>(at)) {
    ++at;
  }
  ASSERT_LT(at, full.tokens.size());
  GenerationOptions eos = greedy(40);
  eos.eos_ids = {full.tokens[at]};
  auto plain_session = engine->new_session();
  auto guessed_session = engine->new_session();
  ASSERT_TRUE(plain_session.ok() && guessed_session.ok());
  auto plain = generate_tokens(**plain_session, prompt, eos);
  eos.speculation.proposer = &right;
  auto guessed = generate_tokens(**guessed_session, prompt, eos);
  ASSERT_TRUE(plain.ok() && guessed.ok());
  EXPECT_EQ(guessed->stop_reason, StopReason::kEos);
  EXPECT_EQ(guessed->tokens, plain->tokens);
  EXPECT_EQ(guessed->tokens.size(), at);
  // Guesses checked past the end are forgotten: the caches hold what plain decoding left.
  EXPECT_TRUE(std::ranges::equal((*guessed_session)->cached_tokens(), (*plain_session)->cached_tokens()));

  // A stop string: the text of two tokens in the middle of the run.
  auto stop = (*tokenizer)->decode(std::span(full.tokens).subspan(24, 2), true);
  ASSERT_TRUE(stop.ok());
  GenerationOptions stopped = greedy(40);
  stopped.stop_strings = {*stop};
  auto plain_text = generate_text(**plain_session, **tokenizer, prompt, stopped);
  stopped.speculation.proposer = &right;
  auto guessed_text = generate_text(**guessed_session, **tokenizer, prompt, stopped);
  ASSERT_TRUE(plain_text.ok() && guessed_text.ok());
  EXPECT_EQ(guessed_text->stop_reason, StopReason::kStopString);
  EXPECT_EQ(guessed_text->text, plain_text->text);
  EXPECT_EQ(guessed_text->tokens, plain_text->tokens);
}

TEST(SpeculationTest, TheCacheFillingMidGuessEndsWherePlainDecodingEnds) {
  // A cache of 64: the prompt's ~40 tokens leave room for ~25; guesses never pass the end.
  auto engine = open_bundled({"cache64", 8, 64, false}, /*portable=*/true);
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> prompt = encode(*engine, kPrompt);
  ASSERT_LT(prompt.size(), 60u);
  GenerationOptions options = greedy(1000);
  options.stop_at_context_end = true;
  const GenerationResult plain = generate(*engine, prompt, options);
  ASSERT_EQ(plain.stop_reason, StopReason::kContextFull);
  Oracle right(plain.tokens, prompt.size(), 0, vocab_of(*engine));
  options.speculation.proposer = &right;
  options.speculation.draft_max = 16;
  const GenerationResult guessed = generate(*engine, prompt, options);
  EXPECT_EQ(guessed.stop_reason, StopReason::kContextFull);
  EXPECT_EQ(guessed.tokens, plain.tokens);
  options.speculation.proposer = nullptr;
  options.speculation.lookup_ngram = 1;
  EXPECT_EQ(generate(*engine, prompt, options).tokens, plain.tokens);
}

// A failing proposer (a draft program's error) stops guessing; generation goes on plainly.
class Failing final : public Proposer {
 public:
  Status propose(std::span<const int32_t>, int64_t, int64_t, std::vector<int32_t>& out) override {
    out.push_back(1);  // half-written guesses are dropped with the error
    return unavailable("the draft's device went away");
  }
};

TEST(SpeculationTest, AFailingProposerLeavesPlainDecodingAndSaysWhy) {
  auto engine = open_bundled({"inplace", 64, 256, false}, /*portable=*/true);
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> prompt = encode(*engine, kPrompt);
  const GenerationResult plain = generate(*engine, prompt, greedy(16));
  Failing failing;
  GenerationOptions options = greedy(16);
  options.speculation.proposer = &failing;
  const GenerationResult guessed = generate(*engine, prompt, options);
  EXPECT_EQ(guessed.tokens, plain.tokens);
  EXPECT_EQ(guessed.speculation.checks, 0);
  EXPECT_NE(guessed.speculation.proposer_error.find("device went away"), std::string::npos);
}

// A conversation's next turn reuses the cache a speculative turn left, and a draft whose cache is
// shorter than the text stops guessing at its end: the tokens stay plain decoding's.
TEST(SpeculationTest, ANextTurnAndAShortDraftKeepPlainDecodingsTokens) {
  auto engine = open_bundled({"inplace", 64, 256, false}, /*portable=*/true);
  auto short_draft = open_bundled({"cache64", 8, 64, false}, /*portable=*/true);
  ASSERT_NE(engine, nullptr);
  ASSERT_NE(short_draft, nullptr);
  std::vector<int32_t> prompt = encode(*engine, kPrompt);
  auto plain_session = engine->new_session();
  auto guessed_session = engine->new_session();
  auto draft_session = short_draft->new_session();
  ASSERT_TRUE(plain_session.ok() && guessed_session.ok() && draft_session.ok());
  GenerationOptions plain = greedy(24);
  plain.reuse_cached_prefix = true;
  GenerationOptions guessed = plain;
  guessed.speculation.draft = draft_session->get();
  for (int turn = 0; turn < 2; ++turn) {
    auto a = generate_tokens(**plain_session, prompt, plain);
    auto b = generate_tokens(**guessed_session, prompt, guessed);
    ASSERT_TRUE(a.ok() && b.ok()) << b.status().to_string();
    EXPECT_EQ(b->tokens, a->tokens) << "turn " << turn;
    EXPECT_EQ(b->cached_prompt_tokens, a->cached_prompt_tokens);
    EXPECT_TRUE(std::ranges::equal((*guessed_session)->cached_tokens(), (*plain_session)->cached_tokens()));
    // The second turn's text (~90 tokens) is past the draft's 64: it guessed only in the first.
    EXPECT_EQ(b->speculation.drafted > 0, turn == 0);
    prompt.insert(prompt.end(), a->tokens.begin(), a->tokens.end());
  }
}

// Two samples of the third generated token (its id among the most frequent, else "other"), one
// from plain decoding, one speculative, on the native kernels: a chi-square test of homogeneity.
TEST(SpeculationTest, SpeculativeSamplingKeepsTheTargetsDistribution) {
  auto engine = open_bundled({"inplace", 64, 256, false}, /*portable=*/false);
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> prompt = encode(*engine, "And the LORD said unto Moses,");
  auto draft = engine->new_session();
  ASSERT_TRUE(draft.ok());
  constexpr int kRuns = 300;
  std::map<int32_t, int> plain_counts;
  std::map<int32_t, int> guessed_counts;
  int64_t accepted = 0;
  for (int run = 0; run < kRuns; ++run) {
    GenerationOptions options = greedy(3);
    options.sampling.temperature = 1.0f;
    options.sampling.seed = static_cast<uint64_t>(run);
    ++plain_counts[generate(*engine, prompt, options).tokens.at(2)];
    // Other seeds: the two samples are independent.
    options.sampling.seed = static_cast<uint64_t>(kRuns + run);
    options.speculation.draft = draft->get();
    options.speculation.draft_p_min = 0.0f;
    const GenerationResult guessed = generate(*engine, prompt, options);
    accepted += guessed.speculation.accepted;
    ++guessed_counts[guessed.tokens.at(2)];
  }
  EXPECT_GT(accepted, kRuns / 4) << "the draft's guesses must be kept often for the test to mean something";
  // Categories with at least 10 expected draws; the rest pooled.
  std::map<int32_t, std::pair<int, int>> cells;
  for (const auto& [token, count] : plain_counts) cells[token].first += count;
  for (const auto& [token, count] : guessed_counts) cells[token].second += count;
  std::vector<std::pair<int, int>> pooled(1, {0, 0});
  for (const auto& [token, counts] : cells) {
    if (counts.first + counts.second >= 20) {
      pooled.push_back(counts);
    } else {
      pooled[0].first += counts.first;
      pooled[0].second += counts.second;
    }
  }
  double chi2 = 0.0;
  int cells_used = 0;
  for (const auto& [a, b] : pooled) {
    const double total = a + b;
    if (total == 0) continue;
    ++cells_used;
    const double expected = total / 2.0;
    chi2 += (a - expected) * (a - expected) / expected + (b - expected) * (b - expected) / expected;
  }
  ASSERT_GE(cells_used, 3);
  // The 0.999 quantile of chi-square with (cells - 1) degrees of freedom, by Wilson-Hilferty.
  const double dof = cells_used - 1;
  const double z = 3.090;
  const double limit = dof * std::pow(1.0 - 2.0 / (9.0 * dof) + z * std::sqrt(2.0 / (9.0 * dof)), 3.0);
  EXPECT_LT(chi2, limit) << cells_used << " cells";
}

TEST(SpeculationTest, RefusalsNameWhatIsWrong) {
  auto engine = open_bundled({"inplace", 64, 256, false}, /*portable=*/false);
  auto last = open_bundled({"logits_last", 64, 256, false, true}, /*portable=*/false);
  ASSERT_NE(engine, nullptr);
  ASSERT_NE(last, nullptr);
  const std::vector<int32_t> prompt = encode(*engine, kPrompt);

  GenerationOptions options = greedy(8);
  options.speculation.lookup_ngram = 2;
  auto session = last->new_session();
  ASSERT_TRUE(session.ok());
  auto refused = generate_tokens(**session, prompt, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("--logits all"), std::string::npos) << refused.status().to_string();
  EXPECT_NE(last->check_speculation().message().find("--logits all"), std::string::npos);
  EXPECT_TRUE(engine->check_speculation().ok());

  // The same session as its own draft; two proposers; a draft length out of range.
  auto own = engine->new_session();
  ASSERT_TRUE(own.ok());
  GenerationOptions self = greedy(8);
  self.speculation.draft = own->get();
  EXPECT_NE(generate_tokens(**own, prompt, self).status().message().find("draft session"), std::string::npos);
  self.speculation.lookup_ngram = 2;
  EXPECT_EQ(check_speculation_options(self.speculation).code(), StatusCode::kInvalidArgument);
  GenerationOptions zero = greedy(8);
  zero.speculation.lookup_ngram = 2;
  zero.speculation.draft_max = 0;
  EXPECT_NE(check_speculation_options(zero.speculation).message().find("[1, 64]"), std::string::npos);

  // A draft with another tokenizer.
  const std::string other_path = temp_path("speculation_qwen3.slm");
  ASSERT_TRUE(export_hf_static(testing::fixture_dir("qwen3"), other_path, testing::small_options()).ok());
  auto runtime = builtin_engine_runtime();
  ASSERT_TRUE(runtime.ok());
  auto other = Engine::open(other_path, {}, std::move(*runtime));
  ASSERT_TRUE(other.ok()) << other.status().to_string();
  const Status mismatch = engine->check_draft(**other);
  EXPECT_EQ(mismatch.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(mismatch.message().find("tokenizer"), std::string::npos) << mismatch.to_string();
  EXPECT_TRUE(engine->check_draft(*engine).ok());
}

}  // namespace
}  // namespace staticlm
