// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

Sampler make_sampler(const SamplingParams& params, int64_t vocab_size) {
  Result<Sampler> sampler = Sampler::create(params, vocab_size);
  EXPECT_TRUE(sampler.ok()) << sampler.status().to_string();
  return std::move(sampler).value();
}

int32_t sample_ok(Sampler& sampler, const std::vector<float>& logits, const std::vector<int32_t>& history = {}) {
  Result<int32_t> token = sampler.sample(logits, history);
  EXPECT_TRUE(token.ok()) << token.status().to_string();
  return token.ok() ? *token : -1;
}

std::vector<int64_t> count_samples(Sampler& sampler, const std::vector<float>& logits, int64_t draws) {
  std::vector<int64_t> counts(logits.size(), 0);
  for (int64_t i = 0; i < draws; ++i) {
    const int32_t token = sample_ok(sampler, logits);
    if (token < 0 || token >= static_cast<int32_t>(logits.size())) {
      ADD_FAILURE() << "token " << token << " outside the vocabulary";
      return counts;
    }
    ++counts[token];
  }
  return counts;
}

std::vector<float> log_of(const std::vector<double>& probabilities) {
  std::vector<float> logits;
  for (const double p : probabilities) {
    logits.push_back(static_cast<float>(std::log(p)));
  }
  return logits;
}

// Tokens outside `allowed` must never appear; the others must match probabilities[token] / mass of
// `allowed` within 3 standard deviations of a binomial count.
void expect_frequencies(const std::vector<int64_t>& counts, const std::vector<double>& probabilities,
                        const std::set<int32_t>& allowed, int64_t draws) {
  double allowed_mass = 0.0;
  for (const int32_t token : allowed) {
    allowed_mass += probabilities[token];
  }
  for (size_t token = 0; token < counts.size(); ++token) {
    if (allowed.count(static_cast<int32_t>(token)) == 0) {
      EXPECT_EQ(counts[token], 0) << "token " << token << " should have been filtered out";
      continue;
    }
    const double p = probabilities[token] / allowed_mass;
    const double n = static_cast<double>(draws);
    const double sigma = std::sqrt(n * p * (1.0 - p));
    EXPECT_NEAR(static_cast<double>(counts[token]), n * p, 3.0 * sigma + 1.0) << "token " << token;
  }
}

std::vector<double> softmax(const std::vector<float>& logits, double temperature) {
  const double max_logit = *std::max_element(logits.begin(), logits.end());
  std::vector<double> probabilities;
  double total = 0.0;
  for (const float logit : logits) {
    probabilities.push_back(std::exp((logit - max_logit) / temperature));
    total += probabilities.back();
  }
  for (double& p : probabilities) {
    p /= total;
  }
  return probabilities;
}

// Draws `draws` tokens from `probabilities` (as log-probability logits) under `params` and
// expects only `allowed` to appear, at the frequencies `reference` gives them renormalized over
// `allowed` (the probabilities themselves when `reference` is empty).
void expect_draws(const SamplingParams& params, const std::vector<double>& probabilities,
                  const std::set<int32_t>& allowed, int64_t draws, std::vector<double> reference = {}) {
  Sampler sampler = make_sampler(params, static_cast<int64_t>(probabilities.size()));
  const std::vector<int64_t> counts = count_samples(sampler, log_of(probabilities), draws);
  expect_frequencies(counts, reference.empty() ? probabilities : reference, allowed, draws);
}

std::vector<float> random_logits(int64_t count, uint64_t seed, double scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<float> logits(static_cast<size_t>(count));
  for (float& logit : logits) {
    logit = static_cast<float>(normal(rng));
  }
  return logits;
}

TEST(SamplerTest, GreedyPicksTheArgmax) {
  SamplingParams params;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const std::vector<float> logits = random_logits(1000, seed, 3.0);
    Sampler sampler = make_sampler(params, 1000);
    const auto expected = std::max_element(logits.begin(), logits.end()) - logits.begin();
    EXPECT_EQ(sample_ok(sampler, logits), expected);
  }
}

TEST(SamplerTest, GreedyTiesGoToTheLowestIndex) {
  Sampler sampler = make_sampler(SamplingParams{}, 4);
  EXPECT_EQ(sample_ok(sampler, {1.0f, 3.0f, 3.0f, 2.0f}), 1);
  EXPECT_EQ(sample_ok(sampler, {-kInf, 5.0f, -kInf, 5.0f}), 1);
  EXPECT_EQ(sample_ok(sampler, {7.0f, 7.0f, 7.0f, 7.0f}), 0);
}

TEST(SamplerTest, RepetitionPenaltyDividesPositiveLogits) {
  SamplingParams params;
  params.repetition_penalty = 2.0;
  Sampler sampler = make_sampler(params, 2);
  // 2.0 / 2 = 1.0 < 1.2; multiplying instead would keep token 0.
  EXPECT_EQ(sample_ok(sampler, {2.0f, 1.2f}, {0}), 1);
  EXPECT_EQ(sample_ok(sampler, {2.0f, 1.2f}, {}), 0);
}

TEST(SamplerTest, RepetitionPenaltyMultipliesNegativeLogits) {
  SamplingParams params;
  params.repetition_penalty = 2.0;
  Sampler sampler = make_sampler(params, 2);
  // -1.0 * 2 = -2.0 < -1.4; dividing instead would raise it to -0.5 and keep token 0.
  EXPECT_EQ(sample_ok(sampler, {-1.0f, -1.4f}, {0}), 1);
  EXPECT_EQ(sample_ok(sampler, {-1.0f, -1.4f}, {1}), 0);
}

TEST(SamplerTest, RepetitionPenaltyBelowOneFavoursRepeats) {
  SamplingParams params;
  params.repetition_penalty = 0.5;
  Sampler sampler = make_sampler(params, 2);
  EXPECT_EQ(sample_ok(sampler, {1.0f, 1.5f}, {0}), 0);  // 1.0 / 0.5 = 2.0 > 1.5
}

TEST(SamplerTest, RepetitionPenaltyCountsEachTokenOnce) {
  SamplingParams params;
  params.repetition_penalty = 1.5;
  Sampler sampler = make_sampler(params, 2);
  // Once: 2.0 / 1.5 = 1.33 > 1.2. Three times would give 0.59 and pick token 1.
  EXPECT_EQ(sample_ok(sampler, {2.0f, 1.2f}, {0, 0, 0}), 0);
}

TEST(SamplerTest, FrequencyPenaltyGrowsWithEachOccurrence) {
  SamplingParams params;
  params.frequency_penalty = 0.5;
  Sampler sampler = make_sampler(params, 2);
  // Once: 2.0 - 0.5 = 1.5 > 1.2; three times: 2.0 - 1.5 = 0.5 < 1.2.
  EXPECT_EQ(sample_ok(sampler, {2.0f, 1.2f}, {0}), 0);
  EXPECT_EQ(sample_ok(sampler, {2.0f, 1.2f}, {0, 1, 0, 0}), 1);
  params.frequency_penalty = -1.0;  // negative: favours repeats
  Sampler favouring = make_sampler(params, 2);
  EXPECT_EQ(sample_ok(favouring, {1.0f, 1.5f}, {0}), 0);
}

TEST(SamplerTest, PresencePenaltyCountsEachTokenOnce) {
  SamplingParams params;
  params.presence_penalty = 0.5;
  Sampler sampler = make_sampler(params, 3);
  // 2.0 - 0.5 = 1.5 > 1.2 however often token 0 occurred; token 1 is lowered too.
  EXPECT_EQ(sample_ok(sampler, {2.0f, 1.8f, 1.4f}, {0, 0, 0, 0}), 1);
  EXPECT_EQ(sample_ok(sampler, {2.0f, 1.8f, 1.4f}, {0, 0, 1}), 0);
  EXPECT_EQ(sample_ok(sampler, {1.8f, 1.6f, 1.4f}, {0, 1}), 2);
}

TEST(SamplerTest, RepetitionWindowLimitsThePenalizedHistory) {
  const std::vector<float> logits = {2.0f, 1.2f, 0.0f};
  const std::vector<int32_t> history = {0, 2, 2};
  SamplingParams params;
  params.repetition_penalty = 2.0;
  params.repetition_window = 2;  // sees {2, 2}: token 0 keeps 2.0
  Sampler last_two = make_sampler(params, 3);
  EXPECT_EQ(sample_ok(last_two, logits, history), 0);
  params.repetition_window = 3;  // sees token 0: 1.0 < 1.2
  Sampler last_three = make_sampler(params, 3);
  EXPECT_EQ(sample_ok(last_three, logits, history), 1);
  params.repetition_window = 0;  // the whole history
  Sampler whole = make_sampler(params, 3);
  EXPECT_EQ(sample_ok(whole, logits, history), 1);
}

TEST(SamplerTest, HistoryTokensInsideTheWindowMustBeInTheVocabulary) {
  SamplingParams params;
  params.repetition_penalty = 1.3;
  params.repetition_window = 2;
  Sampler sampler = make_sampler(params, 3);
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f};
  Result<int32_t> bad = sampler.sample(logits, std::vector<int32_t>{0, 1, 7});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("history token at index 2 is 7"), std::string::npos) << bad.status().message();
  // Outside the window the token is never read.
  EXPECT_EQ(sample_ok(sampler, logits, {-5, 0, 1}), 2);
}

TEST(SamplerTest, TopKOfOneIsGreedyAtAnyTemperature) {
  for (const double temperature : {0.3, 1.0, 5.0, 100.0}) {
    SamplingParams params;
    params.temperature = temperature;
    params.top_k = 1;
    params.seed = 11;
    Sampler sampler = make_sampler(params, 300);
    for (uint64_t trial = 0; trial < 50; ++trial) {
      std::vector<float> logits = random_logits(300, 100 + trial, 2.0);
      for (float& logit : logits) {
        logit = std::round(logit * 2.0f) / 2.0f;  // coarse values make ties common
      }
      const auto expected = std::max_element(logits.begin(), logits.end()) - logits.begin();
      EXPECT_EQ(sample_ok(sampler, logits), expected) << "temperature " << temperature;
    }
  }
}

TEST(SamplerTest, TopKKeepsTheKLargestOfALargeVocabulary) {
  constexpr int64_t kVocab = 150000;
  const std::vector<float> logits = random_logits(kVocab, 5, 1.0);
  std::vector<int32_t> order(kVocab);
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + 5, order.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  const std::set<int32_t> top_five(order.begin(), order.begin() + 5);

  SamplingParams params;
  params.temperature = 1.0;
  params.top_k = 5;
  params.seed = 3;
  Sampler sampler = make_sampler(params, kVocab);
  std::set<int32_t> seen;
  for (int i = 0; i < 300; ++i) {
    const int32_t token = sample_ok(sampler, logits);
    EXPECT_EQ(top_five.count(token), 1u) << "token " << token;
    seen.insert(token);
  }
  EXPECT_EQ(seen, top_five);  // each keeps ~1/5 of the mass
}

TEST(SamplerTest, TopPKeepsTheSmallestSetReachingP) {
  // Sorted: 0.4 (token 1), 0.3 (token 3), 0.15 (token 4): 0.85 >= 0.8 while 0.7 is not.
  const std::vector<double> probabilities = {0.1, 0.4, 0.05, 0.3, 0.15};
  expect_draws({.temperature = 1.0, .top_p = 0.8, .seed = 42}, probabilities, {1, 3, 4}, 20000);
}

TEST(SamplerTest, TopPAlwaysKeepsTheMostLikelyToken) {
  const std::vector<double> probabilities = {0.1, 0.4, 0.05, 0.3, 0.15};
  SamplingParams params;
  params.temperature = 1.0;
  params.top_p = 0.01;
  Sampler sampler = make_sampler(params, 5);
  const std::vector<int64_t> counts = count_samples(sampler, log_of(probabilities), 500);
  EXPECT_EQ(counts[1], 500);
}

TEST(SamplerTest, TopPSeesTheTemperatureScaledDistribution) {
  // At T=1 top-p 0.5 keeps token 0 alone (p=0.6); at T=1000 the distribution is nearly uniform,
  // so it keeps two tokens (1/3 < 0.5 <= 2/3).
  const std::vector<double> probabilities = {0.6, 0.3, 0.1};
  expect_draws({.temperature = 1000.0, .top_p = 0.5, .seed = 8}, probabilities, {0, 1}, 4000,
               softmax(log_of(probabilities), 1000.0));
}

TEST(SamplerTest, TopPRenormalizesAfterTopK) {
  // After top-k 2: 0.4 / 0.7 = 0.57 >= 0.5 keeps token 1 alone. Without top-k it would also keep token 3.
  const std::vector<double> probabilities = {0.1, 0.4, 0.05, 0.3, 0.15};
  SamplingParams params;
  params.temperature = 1.0;
  params.top_k = 2;
  params.top_p = 0.5;
  Sampler with_top_k = make_sampler(params, 5);
  EXPECT_EQ(count_samples(with_top_k, log_of(probabilities), 1000)[1], 1000);
  params.top_k = 0;
  expect_draws(params, probabilities, {1, 3}, 4000);
}

TEST(SamplerTest, TopPOnALargeVocabularyKeepsExactlyTheNucleus) {
  constexpr int64_t kVocab = 150000;
  const std::vector<float> logits = random_logits(kVocab, 9, 1.0);
  const std::vector<double> probabilities = softmax(logits, 1.0);
  std::vector<int32_t> order(kVocab);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  std::vector<int64_t> rank(kVocab);
  double cumulative = 0.0;
  int64_t nucleus = 0;
  for (int64_t i = 0; i < kVocab; ++i) {
    rank[order[i]] = i;
    if (cumulative < 0.5) {
      cumulative += probabilities[order[i]];
      nucleus = i + 1;
    }
  }
  ASSERT_GT(nucleus, 1000);  // large enough that the sampler must sort past its first chunks

  SamplingParams params;
  params.temperature = 1.0;
  params.top_p = 0.5;
  params.seed = 1;
  Sampler sampler = make_sampler(params, kVocab);
  int64_t deepest_rank = 0;
  for (int i = 0; i < 60; ++i) {
    const int32_t token = sample_ok(sampler, logits);
    ASSERT_GE(token, 0);
    EXPECT_LT(rank[token], nucleus) << "token " << token;
    deepest_rank = std::max(deepest_rank, rank[token]);
  }
  EXPECT_GE(deepest_rank, 256);
}

TEST(SamplerTest, MinPDropsTokensBelowAFractionOfTheMax) {
  // Threshold 0.25 * 0.5 = 0.125: keeps 0.5, 0.2 and 0.15.
  const std::vector<double> probabilities = {0.05, 0.5, 0.1, 0.2, 0.15};
  expect_draws({.temperature = 1.0, .min_p = 0.25, .seed = 5}, probabilities, {1, 3, 4}, 20000);
}

TEST(SamplerTest, TemperatureScalesTheSoftmax) {
  const std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f, 3.0f, 0.0f};
  for (const double temperature : {0.7, 1.0, 2.5}) {
    SamplingParams params;
    params.temperature = temperature;
    params.seed = 1234;
    Sampler sampler = make_sampler(params, 6);
    constexpr int64_t kDraws = 20000;
    const std::vector<int64_t> counts = count_samples(sampler, logits, kDraws);
    const std::vector<double> expected = softmax(logits, temperature);
    double chi_square = 0.0;
    for (size_t token = 0; token < logits.size(); ++token) {
      const double expected_count = expected[token] * kDraws;
      const double difference = static_cast<double>(counts[token]) - expected_count;
      chi_square += difference * difference / expected_count;
    }
    EXPECT_LT(chi_square, 20.52) << "temperature " << temperature;  // 99.9% quantile, 5 degrees of freedom
  }
}

TEST(SamplerTest, MaskedTokensAreNeverSampled) {
  SamplingParams params;
  params.temperature = 100.0;
  Sampler sampler = make_sampler(params, 4);
  const std::vector<int64_t> counts = count_samples(sampler, {-kInf, 0.0f, -kInf, 3.0f}, 2000);
  EXPECT_EQ(counts[0], 0);
  EXPECT_EQ(counts[2], 0);
  EXPECT_GT(counts[1], 0);
}

TEST(SamplerTest, InfiniteLogitsShareAllTheMass) {
  const std::vector<float> logits = {0.0f, kInf, 1.0f, kInf};
  SamplingParams params;
  params.temperature = 1.0;
  Sampler sampler = make_sampler(params, 4);
  constexpr int64_t kDraws = 4000;
  expect_frequencies(count_samples(sampler, logits, kDraws), {0.0, 0.5, 0.0, 0.5}, {1, 3}, kDraws);
  Sampler greedy = make_sampler(SamplingParams{}, 4);
  EXPECT_EQ(sample_ok(greedy, logits), 1);
}

std::vector<int32_t> draw_sequence(Sampler& sampler, const std::vector<float>& logits, int count) {
  std::vector<int32_t> tokens;
  for (int i = 0; i < count; ++i) {
    tokens.push_back(sample_ok(sampler, logits));
  }
  return tokens;
}

TEST(SamplerTest, SeedsMakeSequencesReproducible) {
  const std::vector<float> logits = random_logits(64, 77, 1.0);
  Sampler first = make_sampler({.temperature = 1.0, .seed = 2024}, 64);
  Sampler second = make_sampler({.temperature = 1.0, .seed = 2024}, 64);
  Sampler other = make_sampler({.temperature = 1.0, .seed = 2025}, 64);
  const std::vector<int32_t> sequence = draw_sequence(first, logits, 200);
  EXPECT_EQ(draw_sequence(second, logits, 200), sequence);
  EXPECT_NE(draw_sequence(other, logits, 200), sequence);

  first.reset(2024);
  EXPECT_EQ(draw_sequence(first, logits, 200), sequence);
  other.reset(2024);
  EXPECT_EQ(draw_sequence(other, logits, 200), sequence);
}

TEST(SamplerTest, AFailedCallDoesNotAdvanceTheRandomSequence) {
  const std::vector<float> logits = random_logits(16, 3, 1.0);
  Sampler clean = make_sampler({.temperature = 1.0, .seed = 99}, 16);
  Sampler after_error = make_sampler({.temperature = 1.0, .seed = 99}, 16);
  std::vector<float> with_nan = logits;
  with_nan[4] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(after_error.sample(with_nan, {}).ok());
  EXPECT_EQ(draw_sequence(after_error, logits, 50), draw_sequence(clean, logits, 50));
}

void expect_invalid(const SamplingParams& params, const std::string& field) {
  const Status status = params.validate();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << field;
  EXPECT_NE(status.message().find("'" + field + "'"), std::string::npos) << status.message();
  EXPECT_FALSE(Sampler::create(params, 10).ok()) << field;
}

TEST(SamplerTest, ValidationNamesTheBadField) {
  EXPECT_TRUE(SamplingParams{}.validate().ok());
  SamplingParams params;
  params.temperature = -0.1;
  expect_invalid(params, "temperature");
  params.temperature = std::numeric_limits<double>::infinity();
  expect_invalid(params, "temperature");
  params.temperature = std::numeric_limits<double>::quiet_NaN();
  expect_invalid(params, "temperature");

  params = SamplingParams{};
  params.top_k = -1;
  expect_invalid(params, "top_k");

  for (const double top_p : {0.0, -0.5, 1.01, std::numeric_limits<double>::quiet_NaN()}) {
    params = SamplingParams{};
    params.top_p = top_p;
    expect_invalid(params, "top_p");
  }
  for (const double min_p : {1.0, -0.01, std::numeric_limits<double>::quiet_NaN()}) {
    params = SamplingParams{};
    params.min_p = min_p;
    expect_invalid(params, "min_p");
  }
  for (const double penalty : {0.0, -1.0, std::numeric_limits<double>::infinity()}) {
    params = SamplingParams{};
    params.repetition_penalty = penalty;
    expect_invalid(params, "repetition_penalty");
  }
  params = SamplingParams{};
  params.repetition_window = -1;
  expect_invalid(params, "repetition_window");
  for (const double penalty : {-2.01, 2.5, std::numeric_limits<double>::quiet_NaN()}) {
    params = SamplingParams{};
    params.frequency_penalty = penalty;
    expect_invalid(params, "frequency_penalty");
    params = SamplingParams{};
    params.presence_penalty = penalty;
    expect_invalid(params, "presence_penalty");
  }

  params = SamplingParams{};
  params.top_p = 1.0;
  params.min_p = 0.0;
  params.repetition_window = 0;
  EXPECT_TRUE(params.validate().ok());
}

TEST(SamplerTest, LogitBiasShiftsGreedyAndBansAtMinusOneHundred) {
  SamplingParams params;
  params.logit_bias = {{2, 1.5f}};
  Sampler sampler = make_sampler(params, 3);
  EXPECT_EQ(sample_ok(sampler, {2.0f, 1.0f, 1.0f}), 2);  // 1.0 + 1.5 > 2.0
  params.logit_bias = {{0, -100.0f}};
  Sampler banning = make_sampler(params, 3);
  EXPECT_EQ(sample_ok(banning, {150.0f, 1.0f, 0.5f}), 1);  // banned: 150 - 100 would still have won
  params.temperature = 1.0;
  Sampler sampled = make_sampler(params, 3);
  for (int i = 0; i < 200; ++i) {
    EXPECT_NE(sample_ok(sampled, {99.0f, 0.0f, 0.0f}), 0);  // 99 - 100 = -1 would be drawn about a quarter of the time
  }
}

TEST(SamplerTest, LogitBiasLeavesAMaskedTokenMasked) {
  SamplingParams params;
  params.logit_bias = {{0, 100.0f}};
  Sampler sampler = make_sampler(params, 2);
  EXPECT_EQ(sample_ok(sampler, {-kInf, -5.0f}), 1);  // a grammar's mask outranks a bias
  params.logit_bias = {{1, -100.0f}};
  Sampler banning = make_sampler(params, 2);
  Result<int32_t> none = banning.sample(std::vector<float>{-kInf, 1.0f}, {});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("logit_bias bans every token"), std::string::npos) << none.status().message();
}

TEST(SamplerTest, LogitBiasIsValidated) {
  SamplingParams params;
  params.logit_bias = {{1, 100.5f}};
  expect_invalid(params, "logit_bias");
  params.logit_bias = {{1, std::numeric_limits<float>::quiet_NaN()}};
  expect_invalid(params, "logit_bias");
  params.logit_bias = {{-1, 1.0f}};
  expect_invalid(params, "logit_bias");
  params.logit_bias = {{3, 1.0f}, {3, 2.0f}};
  expect_invalid(params, "logit_bias");
  params.logit_bias = {{10, 1.0f}};
  EXPECT_TRUE(params.validate().ok());
  Result<Sampler> outside = Sampler::create(params, 10);
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.status().message().find("token id 10 is outside the vocabulary [0, 10)"), std::string::npos)
      << outside.status().message();
}

TEST(SamplerTest, CreateRefusesAnEmptyVocabulary) {
  Result<Sampler> sampler = Sampler::create(SamplingParams{}, 0);
  ASSERT_FALSE(sampler.ok());
  EXPECT_NE(sampler.status().message().find("vocab_size"), std::string::npos) << sampler.status().message();
}

TEST(SamplerTest, LogitsMustMatchTheVocabulary) {
  Sampler sampler = make_sampler(SamplingParams{}, 4);
  Result<int32_t> token = sampler.sample(std::vector<float>{1.0f, 2.0f, 3.0f}, {});
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(token.status().message().find("expected 4 values"), std::string::npos) << token.status().message();
  EXPECT_NE(token.status().message().find("found 3"), std::string::npos) << token.status().message();
}

TEST(SamplerTest, NanLogitsAreRejectedWithTheirIndex) {
  Sampler sampler = make_sampler(SamplingParams{}, 4);
  Result<int32_t> token =
      sampler.sample(std::vector<float>{1.0f, 2.0f, std::numeric_limits<float>::quiet_NaN(), 3.0f}, {});
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(token.status().message().find("logits contain NaN at index 2"), std::string::npos)
      << token.status().message();
}

TEST(SamplerTest, AllMaskedLogitsAreRejected) {
  SamplingParams params;
  params.temperature = 1.0;
  Sampler sampler = make_sampler(params, 3);
  Result<int32_t> token = sampler.sample(std::vector<float>{-kInf, -kInf, -kInf}, {});
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(token.status().message().find("-inf"), std::string::npos) << token.status().message();
}

}  // namespace
}  // namespace staticlm
