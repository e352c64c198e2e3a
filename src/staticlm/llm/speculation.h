// SPDX-License-Identifier: Apache-2.0
// Speculative decoding: a proposer guesses the next few tokens, the target program checks them all
// in one prefill chunk (every row's logits), and generation keeps the guesses its own sampling
// agrees with. Decode streams every weight once per step; a checked chunk streams them once for
// several tokens, which is how decode gets past the memory-bandwidth roofline.
//
// The output is the target's own: each token is sampled from the target's logits exactly as plain
// decoding samples it (same sampler, same random draws, same masks), and a guess is kept only when
// it equals that token. A proposer's guesses are deterministic (prompt lookup; a draft program's
// greedy choice), so "sample from p, keep the guess if equal" is speculative sampling's
// accept-with-min(1, p/q) rule for a point-mass q, the rejected case sampling from the residual.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/llm/contract.h"

namespace staticlm {

// Guesses the tokens that follow `text` (the prompt and every token generated so far).
class Proposer {
 public:
  virtual ~Proposer() = default;
  // Appends at most `max_tokens` guesses to `out` (none is a valid answer). `vocab_limit`: ids at
  // or above it are never guessed.
  virtual Status propose(std::span<const int32_t> text, int64_t max_tokens, int64_t vocab_limit,
                         std::vector<int32_t>& out) = 0;
  // Whether asking costs a model's work (a draft program runs even when it guesses nothing): then
  // asking and getting no guess counts as a check that kept nothing, so a draft that is never
  // sure stops being asked for a while.
  virtual bool asking_costs() const { return false; }
};

struct SpeculationOptions {
  // Prompt lookup: guesses continue the latest earlier occurrence of the text's last tokens (the
  // longest of up to this many that occurs) in the prompt and what was generated. 0: off.
  int lookup_ngram = 0;
  // A draft program's session (a smaller model with the same tokenizer): guesses are its greedy
  // continuation. Used by one generation at a time; its cache follows the target's text.
  LlmSession* draft = nullptr;
  // Any other proposer (the caller's; it must outlive the generation). At most one of these three.
  Proposer* proposer = nullptr;
  // The most tokens guessed per check; the number adapts to how many are kept (down to none).
  int draft_max = 8;
  // A draft program stops guessing where its most likely token's probability falls below this
  // (0: never). A check's extra rows cost little beside a step, so the default guesses on.
  float draft_p_min = 0.0f;

  bool enabled() const { return lookup_ngram > 0 || draft != nullptr || proposer != nullptr; }
};

// What speculation did in one generation.
struct SpeculationStats {
  int64_t drafted = 0;   // tokens guessed and checked
  int64_t accepted = 0;  // of them, kept
  int64_t checks = 0;    // chunks run to check guesses
  // Why guessing stopped partway, when the proposer failed (a draft program's error): the
  // generation goes on by plain decoding, since speculation only saves time.
  std::string proposer_error;
};

// The refusal of a program that keeps only the last position's logits (FailedPrecondition saying
// how to export it): its prefill cannot check guesses.
Status logits_last_cannot_speculate();

// Prompt lookup (SpeculationOptions::lookup_ngram) on its own, for callers composing proposers.
std::unique_ptr<Proposer> make_prompt_lookup(int max_ngram);

// Fails with InvalidArgument for a draft_max outside [1, 64], a negative lookup_ngram, more than
// one proposer, or a draft_p_min outside [0, 1].
Status check_speculation_options(const SpeculationOptions& options);

// How many tokens to guess next, from how many of the last guesses were kept: grows while every
// guess is kept, shrinks to what was kept, and pauses guessing (backing off, then trying again)
// while the share of guesses kept, averaged over the last checks, stays too low to pay for them,
// so a text with nothing to guess decodes as without speculation.
class DraftLength {
 public:
  // Starts short: a check of many rows that keeps nothing costs several decode steps where the
  // rows are compute-bound (a 1B model's), and a text that keeps guesses grows it in a few checks.
  explicit DraftLength(int max_tokens) : max_(max_tokens), next_(std::min<int64_t>(max_tokens, 2)) {}

  // 0 while paused (each call then counts one plain decode step towards the next try).
  int64_t next();
  void checked(int64_t drafted, int64_t accepted);

 private:
  // A check that keeps nothing costs a little more than the step it replaces, one that keeps some
  // saves steps: below this share of guesses kept (a moving average, each check weighing
  // kAverageWeight) guessing pauses, for kFirstPause plain steps, twice as long each time it
  // recurs (up to kLongestPause), the average starting again at kAfterPause so one more check
  // decides.
  static constexpr double kPauseBelow = 0.15;
  static constexpr double kAverageWeight = 0.3;
  static constexpr double kAfterPause = 0.2;
  static constexpr int64_t kFirstPause = 16;
  static constexpr int64_t kLongestPause = 512;
  int64_t max_;
  int64_t next_;
  double kept_share_ = 0.35;  // three checks keeping nothing pause guessing at the start
  int64_t paused_for_ = 0;    // plain steps left before guessing again
  int64_t backoff_ = kFirstPause;
};

// Feeds each generated token to the target session and gives the logits that follow it: from the
// last check where the token is a guess it kept, else by checking the token with the next guesses
// as one prefill chunk (every row's logits), or by a decode step when there are none.
class TokenFeeder {
 public:
  // Without speculation (options.enabled() false) every token is a decode step. The session must
  // keep every position's logits when speculation is on.
  TokenFeeder(LlmSession& session, const SpeculationOptions& options, int64_t vocab_limit);
  // finish(): a generation that ends early by an error leaves the cache as plain decoding would too.
  ~TokenFeeder() { finish(); }
  TokenFeeder(const TokenFeeder&) = delete;
  TokenFeeder& operator=(const TokenFeeder&) = delete;

  // `text`: the prompt and the tokens generated so far, the last one to feed (the cache holds the
  // others). `max_guesses`: the most tokens that may still be guessed (what generation has room
  // for). Writes the logits after the last token to `logits` (the session's vocabulary size).
  Status feed(std::span<const int32_t> text, int64_t max_guesses, std::vector<float>& logits);
  // Forgets guesses fed but not kept, so the cache holds what plain decoding leaves.
  void finish();

  const SpeculationStats& stats() const { return stats_; }

 private:
  LlmSession& session_;
  std::unique_ptr<Proposer> proposer_;
  DraftLength length_;
  int64_t vocab_limit_;
  std::vector<int32_t> guesses_;  // of the current check
  size_t kept_ = 0;               // of guesses_, equal to the tokens sampled since
  std::vector<float> rows_;       // the current check's logits, one row per token fed
  std::vector<int32_t> chunk_;
  int64_t fed_until_ = -1;  // positions of the text fed: the cache beyond holds guesses not kept
  SpeculationStats stats_;
};

}  // namespace staticlm
