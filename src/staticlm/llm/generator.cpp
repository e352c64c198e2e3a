// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/generator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "staticlm/core/process_memory.h"
#include "staticlm/core/utf8.h"
#include "staticlm/llm/grammar/grammar_matcher.h"
#include "staticlm/llm/tokenizer/streaming_decoder.h"

namespace staticlm {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Holds back generated text that could still turn into a stop string, and finds the first
// stop string once it is complete.
class StopStringFilter {
 public:
  explicit StopStringFilter(const std::vector<std::string>& stops) : stops_(stops) {}

  // Adds text; returns what can be emitted now. Sets `stopped` when a stop string completed
  // (the returned text then ends right before it).
  std::string add(std::string_view text, bool& stopped) {
    held_ += text;
    size_t first_stop = std::string::npos;
    for (const std::string& stop : stops_) {
      if (!stop.empty()) {
        first_stop = std::min(first_stop, held_.find(stop));
      }
    }
    if (first_stop != std::string::npos) {
      stopped = true;
      std::string out = held_.substr(0, first_stop);
      held_.clear();
      return out;
    }
    // Keep the longest suffix that is a proper prefix of some stop string.
    size_t keep = 0;
    for (const std::string& stop : stops_) {
      for (size_t length = std::min(stop.size() - (stop.empty() ? 0 : 1), held_.size()); length > keep; --length) {
        if (held_.compare(held_.size() - length, length, stop, 0, length) == 0) {
          keep = length;
          break;
        }
      }
    }
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
  }

  std::string flush() { return std::exchange(held_, std::string()); }

 private:
  const std::vector<std::string>& stops_;
  std::string held_;
};

// The tokens the grammar allows next, end-of-sequence ids where it may end. Fails with
// FailedPrecondition when the vocabulary has no token that continues the text.
Status constrain(GrammarMatcher& matcher, const std::vector<int32_t>& eos_ids, TokenBitmask& allowed, int64_t step) {
  STATICLM_RETURN_IF_ERROR(matcher.fill_mask(allowed));
  if (matcher.can_end()) {
    for (int32_t id : eos_ids) {
      if (id >= 0 && id < allowed.size()) {
        allowed.set(id);
      }
    }
  }
  if (!allowed.any()) {
    return failed_precondition("generated token ", step, ": the grammar allows no token of the vocabulary after ",
                               matcher.bytes_accepted(), " bytes of output",
                               matcher.can_end() ? " (it may end, but the program has no end-of-sequence token)" : "");
  }
  return ok_status();
}

// The text of a constrained generation: exactly the bytes the grammar took, each token's piece
// as the grammar's vocabulary has it, released a whole character at a time.
class GrammarText {
 public:
  explicit GrammarText(const TokenVocabulary& vocabulary) : vocabulary_(vocabulary) {}

  std::string feed(int32_t token) {
    if (token >= 0 && token < vocabulary_.size()) {
      held_ += vocabulary_.piece(token);
    }
    const size_t keep = utf8_incomplete_tail_length(held_);
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
  }

  std::string flush() { return utf8_repair(std::exchange(held_, std::string())); }

 private:
  const TokenVocabulary& vocabulary_;
  std::string held_;
};

}  // namespace

StepLogprobs step_logprobs(std::span<const float> logits, int top) {
  StepLogprobs out;
  if (logits.empty()) {
    return out;
  }
  const float most = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float x : logits) {
    sum += std::exp(static_cast<double>(x) - most);
  }
  out.log_sum_exp = most + std::log(sum);
  // The `top` best so far, best first; a later id replaces a kept one only when strictly larger.
  auto& best = out.top;
  const size_t keep = std::min(static_cast<size_t>(std::max(top, 0)), logits.size());
  for (size_t id = 0; id < logits.size() && keep > 0; ++id) {
    const float x = logits[id];
    if (best.size() == keep && !(x > best.back().second)) {
      continue;
    }
    auto at = std::find_if(best.begin(), best.end(), [&](const auto& kept) { return x > kept.second; });
    best.insert(at, {static_cast<int32_t>(id), x});
    if (best.size() > keep) {
      best.pop_back();
    }
  }
  for (auto& [id, value] : best) {
    value = static_cast<float>(value - out.log_sum_exp);
  }
  return out;
}

int64_t common_prefix_length(std::span<const int32_t> a, std::span<const int32_t> b) {
  return std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin();
}

std::string_view stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::kEos: return "end of sequence";
    case StopReason::kStopString: return "stop string";
    case StopReason::kMaxNewTokens: return "max new tokens";
    case StopReason::kContextFull: return "context full";
    case StopReason::kCancelled: return "stopped by the caller";
    case StopReason::kGrammarComplete: return "grammar complete";
  }
  return "unknown";
}

Result<GenerationResult> generate_tokens(LlmSession& session, std::span<const int32_t> prompt,
                                         const GenerationOptions& options, const TokenCallback& on_token) {
  if (prompt.empty()) {
    return invalid_argument("the prompt has no tokens");
  }
  if (options.max_new_tokens < 0) {
    return invalid_argument("max_new_tokens must be >= 0, found ", options.max_new_tokens);
  }
  STATICLM_ASSIGN_OR_RETURN(Sampler sampler, Sampler::create(options.sampling, session.vocab_size()));
  const auto prompt_len = static_cast<int64_t>(prompt.size());
  // The last generated token is never fed back, so n new tokens need prompt_len + n - 1 positions.
  const int64_t room = max_new_tokens_that_fit(prompt_len, session.max_cache_len());
  int64_t max_new_tokens = options.max_new_tokens;
  if (room < 1 || max_new_tokens > room) {
    if (options.stop_at_context_end) {
      if (room < 1) {
        return out_of_range("the prompt (", prompt_len, " tokens) leaves no room for a new token in the program's ",
                            "cache of ", session.max_cache_len(),
                            "; shorten the prompt, or export with a larger max_cache_len");
      }
      max_new_tokens = room;
    } else {
      // Summed as unsigned: max_new_tokens may be as large as int64_t holds.
      const uint64_t needed =
          static_cast<uint64_t>(prompt_len) + static_cast<uint64_t>(std::max<int64_t>(0, options.max_new_tokens - 1));
      return out_of_range("the prompt (", prompt_len, " tokens) plus ", options.max_new_tokens, " new tokens needs ",
                          needed, " cache positions, but the program's cache holds ", session.max_cache_len(),
                          "; shorten the prompt, lower max_new_tokens, or export with a larger max_cache_len");
    }
  }
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || prompt[i] >= session.vocab_size()) {
      return invalid_argument("prompt token ", i, " is ", prompt[i], ", outside the vocabulary [0, ",
                              session.vocab_size(), ")");
    }
  }
  GenerationResult result;
  result.prompt_tokens.assign(prompt.begin(), prompt.end());
  std::vector<int32_t> history(prompt.begin(), prompt.end());
  std::vector<float> logits(static_cast<size_t>(session.vocab_size()));
  int64_t last_index = -1;
  auto keep_last = [&](int64_t index, std::span<const float> row) {
    if (index >= last_index) {
      last_index = index;
      std::copy(row.begin(), row.end(), logits.begin());
    }
  };

  if (options.top_logprobs > kMaxTopLogprobs) {
    return invalid_argument("top_logprobs is ", options.top_logprobs, "; at most ", kMaxTopLogprobs, " are given");
  }
  const bool score_prompt = options.prompt_logprobs && options.top_logprobs >= 0;
  if (score_prompt && !session.prefill_returns_all_logits()) {
    return failed_precondition(
        "the prompt's log-probabilities need every position's logits, and this program keeps only the last "
        "(exported with --logits last): export it with --logits all");
  }
  const int64_t real_vocab = options.sample_vocab_limit > 0 && options.sample_vocab_limit < session.vocab_size()
                                 ? options.sample_vocab_limit
                                 : session.vocab_size();
  auto logprob_of = [&](std::span<const float> row, int32_t token) {
    StepLogprobs step = step_logprobs(row.first(static_cast<size_t>(real_vocab)), options.top_logprobs);
    return TokenLogprob{token, static_cast<float>(row[static_cast<size_t>(token)] - step.log_sum_exp),
                        std::move(step.top)};
  };

  // At least the last prompt token is fed, for the logits that sample the first new token.
  const int64_t cached = options.reuse_cached_prefix && !score_prompt
                             ? std::min(common_prefix_length(session.cached_tokens(), prompt), prompt_len - 1)
                             : 0;
  session.truncate(cached);
  result.cached_prompt_tokens = cached;
  const std::span<const int32_t> fed = prompt.subspan(static_cast<size_t>(cached));
  const auto start = Clock::now();
  if (score_prompt) {
    result.prompt_logprobs.reserve(fed.size() - 1);
    STATICLM_RETURN_IF_ERROR(session.prefill(
        fed,
        [&](int64_t index, std::span<const float> row) {
          if (index + 1 < static_cast<int64_t>(fed.size())) {
            result.prompt_logprobs.push_back(logprob_of(row, fed[static_cast<size_t>(index) + 1]));
          }
          keep_last(index, row);
        },
        PrefillLogits::kEvery));
  } else {
    STATICLM_RETURN_IF_ERROR(session.prefill(fed, keep_last, PrefillLogits::kLast));
  }
  result.prefill_seconds = seconds_since(start);
  if (last_index != static_cast<int64_t>(fed.size()) - 1) {
    return internal_error("prefill returned no logits for the last prompt token");
  }

  std::optional<GrammarMatcher> matcher;
  TokenBitmask allowed;
  if (options.grammar) {
    if (options.grammar->vocabulary().size() > session.vocab_size()) {
      return invalid_argument("the grammar was compiled for a vocabulary of ", options.grammar->vocabulary().size(),
                              " tokens, but the program has ", session.vocab_size(), " logits");
    }
    matcher.emplace(options.grammar);
    allowed = TokenBitmask(static_cast<int32_t>(session.vocab_size()));
  }
  const auto decode_start = Clock::now();
  for (int64_t step = 0; step < max_new_tokens; ++step) {
    if (options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed)) {
      result.stop_reason = StopReason::kCancelled;
      break;
    }
    if (matcher && matcher->is_complete()) {
      result.stop_reason = StopReason::kGrammarComplete;
      break;
    }
    // Before the vocabulary limit and the grammar's mask change the logits.
    std::optional<StepLogprobs> step_logprob;
    if (options.top_logprobs >= 0) {
      step_logprob =
          step_logprobs(std::span<const float>(logits).first(static_cast<size_t>(real_vocab)), options.top_logprobs);
    }
    if (options.sample_vocab_limit > 0 && options.sample_vocab_limit < session.vocab_size()) {
      std::fill(logits.begin() + options.sample_vocab_limit, logits.end(), -std::numeric_limits<float>::infinity());
    }
    if (matcher) {
      STATICLM_RETURN_IF_ERROR(constrain(*matcher, options.eos_ids, allowed, step));
      mask_logits(logits, allowed.words());
    }
    Result<int32_t> sampled = sampler.sample(logits, history);
    if (!sampled.ok() && sampled.status().code() == StatusCode::kDataLoss) {
      return sampled.status().with_context(str_cat("generated token ", step,
                                                   ": the program computed NaN (damaged weights? `staticlm inspect ",
                                                   "PROGRAM --verify` checks every byte against its checksums)"));
    }
    STATICLM_ASSIGN_OR_RETURN(const int32_t token, std::move(sampled));
    if (step == 0) {
      result.time_to_first_token_seconds = seconds_since(start);
    }
    if (std::find(options.eos_ids.begin(), options.eos_ids.end(), token) != options.eos_ids.end()) {
      result.stop_reason = StopReason::kEos;
      break;
    }
    if (matcher) {
      STATICLM_RETURN_IF_ERROR(matcher->accept_token(token));
    }
    if (step_logprob) {
      // The sampled token is allowed and below the vocabulary limit, so masking left its logit as is.
      TokenLogprob entry{token, static_cast<float>(logits[static_cast<size_t>(token)] - step_logprob->log_sum_exp),
                         std::move(step_logprob->top)};
      if (options.on_logprob) {
        options.on_logprob(entry);
      }
      result.logprobs.push_back(std::move(entry));
    }
    result.tokens.push_back(token);
    history.push_back(token);
    if (on_token && !on_token(token)) {
      result.stop_reason = StopReason::kCancelled;
      break;
    }
    if (matcher && matcher->is_complete()) {
      result.stop_reason = StopReason::kGrammarComplete;
      break;
    }
    if (step + 1 == max_new_tokens) {
      if (max_new_tokens < options.max_new_tokens) {
        result.stop_reason = StopReason::kContextFull;
      }
      break;
    }
    STATICLM_RETURN_IF_ERROR(session.decode(
        token, [&](int64_t, std::span<const float> row) { std::copy(row.begin(), row.end(), logits.begin()); }));
    ++result.decode_steps;
  }
  result.decode_seconds = seconds_since(decode_start);
  if (matcher) {
    result.grammar_complete = matcher->can_end() && result.stop_reason != StopReason::kCancelled;
  }
  result.peak_rss_bytes = peak_rss_bytes();
  result.io = session.io_stats();
  return result;
}

Result<GenerationResult> generate_text(LlmSession& session, const Tokenizer& tokenizer, std::string_view prompt,
                                       const GenerationOptions& options, const TextCallback& on_text) {
  EncodeOptions encode;
  encode.add_special_tokens = options.add_special_tokens;
  STATICLM_ASSIGN_OR_RETURN(std::vector<int32_t> prompt_tokens, tokenizer.encode(prompt, encode));
  return generate_text(session, tokenizer, std::span<const int32_t>(prompt_tokens), options, on_text);
}

Result<GenerationResult> generate_text(LlmSession& session, const Tokenizer& tokenizer,
                                       std::span<const int32_t> prompt_tokens, const GenerationOptions& options,
                                       const TextCallback& on_text) {
  StreamingDecoder decoder(tokenizer, /*skip_special=*/true);
  // The text continues the prompt: a first token's leading space is kept.
  decoder.continue_after(prompt_tokens);
  std::optional<GrammarText> grammar_text;
  if (options.grammar) {
    grammar_text.emplace(options.grammar->vocabulary());
  }
  StopStringFilter filter(options.stop_strings);
  std::string text;
  Status stream_error;
  bool stopped = false;
  auto emit = [&](const std::string& piece) {
    if (!piece.empty()) {
      text += piece;
      if (on_text) {
        on_text(piece);
      }
    }
  };
  auto on_token = [&](int32_t token) {
    if (grammar_text) {
      emit(filter.add(grammar_text->feed(token), stopped));
      return !stopped;
    }
    auto piece = decoder.feed(token);
    if (!piece.ok()) {
      stream_error = piece.status();
      return false;
    }
    emit(filter.add(*piece, stopped));
    return !stopped;
  };
  GenerationOptions limited = options;
  limited.sample_vocab_limit = tokenizer.vocab_size();
  STATICLM_ASSIGN_OR_RETURN(GenerationResult result, generate_tokens(session, prompt_tokens, limited, on_token));
  STATICLM_RETURN_IF_ERROR(stream_error);
  if (!stopped) {
    STATICLM_ASSIGN_OR_RETURN(std::string tail,
                              grammar_text ? Result<std::string>(grammar_text->flush()) : decoder.flush());
    emit(filter.add(tail, stopped));
    if (!stopped) {
      emit(filter.flush());
    }
  }
  if (stopped) {
    result.stop_reason = StopReason::kStopString;
    if (result.grammar_complete) {
      result.grammar_complete = false;  // the text was cut before the stop string
    }
  }
  result.text = std::move(text);
  return result;
}

}  // namespace staticlm
