// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/speculation.h"

#include <algorithm>
#include <cmath>

#include "staticlm/llm/generator.h"

namespace staticlm {
namespace {

// The latest earlier occurrence of the text's last n tokens (n from `max_ngram` down to 1) with
// something after it; its continuation is the guess. A longer match is the better predictor, so
// it is preferred even where it lies further back.
class PromptLookup final : public Proposer {
 public:
  explicit PromptLookup(int max_ngram) : max_ngram_(max_ngram) {}

  Status propose(std::span<const int32_t> text, int64_t max_tokens, int64_t vocab_limit,
                 std::vector<int32_t>& out) override {
    const auto size = static_cast<int64_t>(text.size());
    for (int64_t n = std::min<int64_t>(max_ngram_, size - 1); n >= 1; --n) {
      const std::span<const int32_t> tail = text.last(static_cast<size_t>(n));
      // A match at `start` must leave a token after it that is not the tail itself.
      for (int64_t start = size - n - 1; start >= 0; --start) {
        if (!std::equal(tail.begin(), tail.end(), text.begin() + start)) {
          continue;
        }
        // Copied as LZ77 copies: past the end of the text the copy reads its own guesses, so a
        // text repeating with a period shorter than the guesses (a loop) is continued whole.
        const size_t first = out.size();
        for (int64_t at = start + n; static_cast<int64_t>(out.size() - first) < max_tokens; ++at) {
          const int32_t token = at < size ? text[static_cast<size_t>(at)] : out[first + static_cast<size_t>(at - size)];
          if (token >= vocab_limit) {
            break;
          }
          out.push_back(token);
        }
        return ok_status();
      }
    }
    return ok_status();
  }

 private:
  int max_ngram_;
};

// The draft program's greedy continuation, stopped where it is unsure. Its cache keeps the text
// it shares with the target's, so each call feeds only what changed (the tokens kept or sampled
// since), then one decode step per guess.
class DraftProgram final : public Proposer {
 public:
  DraftProgram(LlmSession& draft, float p_min) : draft_(draft), p_min_(p_min) {}

  Status propose(std::span<const int32_t> text, int64_t max_tokens, int64_t vocab_limit,
                 std::vector<int32_t>& out) override {
    const auto size = static_cast<int64_t>(text.size());
    // The last guess is never fed back, so k guesses need size + k - 1 positions.
    max_tokens = std::min(max_tokens, draft_.max_cache_len() - size + 1);
    if (max_tokens < 1) {
      return ok_status();
    }
    const int64_t kept = std::min(common_prefix_length(draft_.cached_tokens(), text), size - 1);
    draft_.truncate(kept);
    logits_.resize(static_cast<size_t>(draft_.vocab_size()));
    auto keep_row = [&](int64_t, std::span<const float> row) { std::copy(row.begin(), row.end(), logits_.begin()); };
    STATICLM_RETURN_IF_ERROR(
        draft_.prefill(text.subspan(static_cast<size_t>(kept)), keep_row, PrefillLogits::kLast).with_context("draft"));
    const int64_t limit = std::min(vocab_limit, draft_.vocab_size());
    for (int64_t i = 0; i < max_tokens; ++i) {
      const std::span<const float> row = std::span<const float>(logits_).first(static_cast<size_t>(limit));
      const auto best = std::max_element(row.begin(), row.end());
      if (!(std::isfinite(*best))) {
        break;
      }
      if (p_min_ > 0.0f) {
        double sum = 0.0;
        for (float x : row) {
          sum += std::exp(static_cast<double>(x - *best));
        }
        if (1.0 / sum < p_min_) {
          break;
        }
      }
      const auto token = static_cast<int32_t>(best - row.begin());
      out.push_back(token);
      if (i + 1 < max_tokens) {
        STATICLM_RETURN_IF_ERROR(draft_.decode(token, keep_row).with_context("draft"));
      }
    }
    return ok_status();
  }

  bool asking_costs() const override { return true; }

 private:
  LlmSession& draft_;
  float p_min_;
  std::vector<float> logits_;
};

}  // namespace

Status logits_last_cannot_speculate() {
  return failed_precondition(
      "speculative decoding checks guessed tokens with every position's logits, and this program keeps only the "
      "last (exported with --logits last): export it with --logits all");
}

std::unique_ptr<Proposer> make_prompt_lookup(int max_ngram) {
  return std::make_unique<PromptLookup>(max_ngram);
}

Status check_speculation_options(const SpeculationOptions& options) {
  if (options.lookup_ngram < 0) {
    return invalid_argument("lookup_ngram must be >= 0, found ", options.lookup_ngram);
  }
  if ((options.lookup_ngram > 0) + (options.draft != nullptr) + (options.proposer != nullptr) > 1) {
    return invalid_argument("speculation takes one proposer: a draft program, prompt lookup or the caller's");
  }
  if (options.draft_max < 1 || options.draft_max > 64) {
    return invalid_argument("draft_max (the most tokens guessed per check) must be in [1, 64], found ",
                            options.draft_max);
  }
  if (!(options.draft_p_min >= 0.0f && options.draft_p_min <= 1.0f)) {
    return invalid_argument("draft_p_min must be in [0, 1], found ", options.draft_p_min);
  }
  return ok_status();
}

namespace {

// Lets TokenFeeder own every proposer alike.
class Borrowed final : public Proposer {
 public:
  explicit Borrowed(Proposer& proposer) : proposer_(proposer) {}
  Status propose(std::span<const int32_t> text, int64_t max_tokens, int64_t vocab_limit,
                 std::vector<int32_t>& out) override {
    return proposer_.propose(text, max_tokens, vocab_limit, out);
  }
  bool asking_costs() const override { return proposer_.asking_costs(); }

 private:
  Proposer& proposer_;
};

std::unique_ptr<Proposer> make_proposer(const SpeculationOptions& options) {
  if (options.proposer != nullptr) {
    return std::make_unique<Borrowed>(*options.proposer);
  }
  if (options.draft != nullptr) {
    return std::make_unique<DraftProgram>(*options.draft, options.draft_p_min);
  }
  if (options.lookup_ngram > 0) {
    return std::make_unique<PromptLookup>(options.lookup_ngram);
  }
  return nullptr;
}

}  // namespace

TokenFeeder::TokenFeeder(LlmSession& session, const SpeculationOptions& options, int64_t vocab_limit)
    : session_(session), proposer_(make_proposer(options)), length_(options.draft_max), vocab_limit_(vocab_limit) {}

Status TokenFeeder::feed(std::span<const int32_t> text, int64_t max_guesses, std::vector<float>& logits) {
  const auto position = static_cast<int64_t>(text.size()) - 1;
  const auto vocab = static_cast<size_t>(session_.vocab_size());
  fed_until_ = position + 1;
  if (kept_ < guesses_.size() && guesses_[kept_] == text.back() && session_.position() > position) {
    ++kept_;
    ++stats_.accepted;
    std::copy_n(rows_.begin() + static_cast<ptrdiff_t>(kept_ * vocab), vocab, logits.begin());
    return ok_status();
  }
  if (!guesses_.empty()) {
    length_.checked(static_cast<int64_t>(guesses_.size()), static_cast<int64_t>(kept_));
    guesses_.clear();
    kept_ = 0;
  }
  // The slots past `position` hold guesses not kept; the next feed overwrites them.
  session_.truncate(position);
  const int64_t room = std::min(max_guesses, session_.max_cache_len() - position - 1);
  if (proposer_ && room > 0) {
    const int64_t wanted = std::min(length_.next(), room);
    if (wanted > 0) {
      if (Status proposed = proposer_->propose(text, wanted, vocab_limit_, guesses_); !proposed.ok()) {
        stats_.proposer_error = proposed.to_string();
        proposer_.reset();
        guesses_.clear();
      }
      guesses_.resize(std::min(guesses_.size(), static_cast<size_t>(wanted)));
      // A guess outside the vocabulary cannot be the sampled token: it and what follows are dropped.
      const auto bad = std::find_if(guesses_.begin(), guesses_.end(),
                                    [&](int32_t token) { return token < 0 || token >= vocab_limit_; });
      guesses_.erase(bad, guesses_.end());
      if (guesses_.empty() && proposer_ && proposer_->asking_costs()) {
        length_.checked(1, 0);
      }
    }
  }
  auto copy_row = [&](int64_t, std::span<const float> row) { std::copy(row.begin(), row.end(), logits.begin()); };
  if (guesses_.empty()) {
    return session_.decode(text.back(), copy_row);
  }
  chunk_.assign(1, text.back());
  chunk_.insert(chunk_.end(), guesses_.begin(), guesses_.end());
  rows_.resize(chunk_.size() * vocab);
  ++stats_.checks;
  stats_.drafted += static_cast<int64_t>(guesses_.size());
  STATICLM_RETURN_IF_ERROR(session_.prefill(
      chunk_,
      [&](int64_t index, std::span<const float> row) {
        std::copy(row.begin(), row.end(), rows_.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(index) * vocab));
      },
      PrefillLogits::kEvery));
  std::copy_n(rows_.begin(), vocab, logits.begin());
  return ok_status();
}

void TokenFeeder::finish() {
  if (fed_until_ >= 0) {
    session_.truncate(fed_until_);
  }
}

int64_t DraftLength::next() {
  if (paused_for_ > 0) {
    --paused_for_;
    return 0;
  }
  return next_;
}

void DraftLength::checked(int64_t drafted, int64_t accepted) {
  if (drafted <= 0) {
    return;
  }
  kept_share_ += kAverageWeight * (static_cast<double>(accepted) / static_cast<double>(drafted) - kept_share_);
  if (accepted == 0) {
    next_ = std::max<int64_t>(1, next_ / 2);
    if (kept_share_ < kPauseBelow) {
      paused_for_ = backoff_;
      backoff_ = std::min<int64_t>(backoff_ * 2, kLongestPause);
      kept_share_ = kAfterPause;
    }
    return;
  }
  backoff_ = kFirstPause;
  next_ = accepted == drafted ? std::min(max_, next_ + 2) : std::max<int64_t>(1, accepted + 1);
}

}  // namespace staticlm
