// SPDX-License-Identifier: Apache-2.0
// Generation: prompt → chunked prefill → sample → decode loop, with stop conditions, a
// streaming callback and the run statistics users expect (time to first token, prefill and
// decode throughput, peak RSS, and where the I/O buffers came from).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/llm/contract.h"
#include "staticlm/llm/grammar/compiled_grammar.h"
#include "staticlm/llm/sampling/sampler.h"
#include "staticlm/llm/speculation.h"
#include "staticlm/llm/tokenizer/tokenizer.h"

namespace staticlm {

inline constexpr int kMaxTopLogprobs = 20;

// A generated token's natural-log probability, and the most likely tokens at its step (best first).
struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;
};

struct GenerationOptions {
  SamplingParams sampling;
  int64_t max_new_tokens = 128;
  std::vector<int32_t> eos_ids;           // generation stops (without emitting) on any of these
  std::vector<std::string> stop_strings;  // generation stops before the first occurrence of any
  bool add_special_tokens = true;         // BOS etc. as the tokenizer defines
  // Keep the session's cached tokens that the prompt starts with and prefill only the rest (a
  // conversation's next turn, a request extending an earlier one). False: reset the session.
  bool reuse_cached_prefix = false;
  // Ids at or above this are never sampled (0 = no limit). Models often pad the logits beyond
  // the tokenizer's vocabulary (Qwen: 151936 logits, 151665 tokens); generate_text sets it to
  // the tokenizer's vocab_size so a padding id can never reach the detokenizer.
  int64_t sample_vocab_limit = 0;
  // Set from any thread to stop after the token being generated (Ctrl-C, a closed connection):
  // the result so far is returned with StopReason::kCancelled.
  const std::atomic<bool>* cancel = nullptr;
  // A max_new_tokens the cache cannot hold is refused up front; with this set, generation instead
  // runs until the cache is full and stops there with StopReason::kContextFull (a chat reply, a
  // server request without max_tokens: the caller wants "as much as fits", not an error).
  bool stop_at_context_end = false;
  // Constrains every token to keep the text inside this grammar (compiled against the tokenizer
  // the text is decoded with, Engine::compile_grammar): end-of-sequence ids are allowed only where
  // the grammar may end, and generation stops with StopReason::kGrammarComplete as soon as the
  // grammar is complete and nothing may follow. Null: unconstrained.
  std::shared_ptr<const CompiledGrammar> grammar;
  // With a grammar: it applies only from where the generated text first holds this string (at
  // the start of the reply, leading whitespace aside, when `grammar_trigger_at_start`), the text
  // from the string on fed to it, so the grammar starts with the string. Before that the text is
  // free; if the text from the string on is not one the grammar can start with, it stays free.
  // Empty: the grammar applies from the first token. (A tool call a model may make or not.)
  std::string grammar_trigger;
  bool grammar_trigger_at_start = false;
  // Each generated token's log-probability and this many most likely alternatives (at most
  // kMaxTopLogprobs); -1: none. They come from the program's logits as it computed them, before
  // logit_bias, penalties, temperature and a grammar's mask (OpenAI's logprobs are the model's).
  int top_logprobs = -1;
  // With top_logprobs >= 0: called with each generated token's entry as it is sampled, before its
  // text reaches the TextCallback (a stream sends them with the text).
  std::function<void(const TokenLogprob&)> on_logprob;
  // Called with each generated token (not an end-of-sequence one) as it is sampled, before its
  // text reaches the TextCallback (llama-server's stream sends the ids with the text).
  std::function<void(int32_t token)> on_generated_token;
  // With top_logprobs >= 0: the prompt's tokens' log-probabilities too (GenerationResult::
  // prompt_logprobs). The whole prompt is then prefilled, none of it taken from the cache, and
  // the program must keep every position's logits (exported with --logits all).
  bool prompt_logprobs = false;
  // Speculative decoding (speculation.h): the tokens are those plain decoding gives; the program
  // must keep every position's logits (exported with --logits all).
  SpeculationOptions speculation;
};

// kMaxNewTokens: the caller's max_new_tokens was reached; kContextFull: the cache filled first
// (only with stop_at_context_end); kGrammarComplete: the grammar matched and allows nothing more.
enum class StopReason { kEos, kStopString, kMaxNewTokens, kContextFull, kCancelled, kGrammarComplete };
std::string_view stop_reason_name(StopReason reason);

struct GenerationResult {
  std::vector<int32_t> prompt_tokens;
  int64_t cached_prompt_tokens = 0;  // prompt tokens found in the session's cache, not prefilled
  std::vector<int32_t> tokens;       // generated, without the eos token that stopped generation
  std::string text;                  // generated text (stop string excluded)
  StopReason stop_reason = StopReason::kMaxNewTokens;
  std::string stop_string;  // with kStopString: the stop string that ended the text
  // With a grammar: whether the text is a complete match (false when max_new_tokens, the context
  // or a stop string ended it first); without one: empty.
  std::optional<bool> grammar_complete;
  // With GenerationOptions::top_logprobs >= 0: one per token of `tokens`.
  std::vector<TokenLogprob> logprobs;
  // With GenerationOptions::prompt_logprobs: one per prompt token after the first (which has no
  // position before it to predict it).
  std::vector<TokenLogprob> prompt_logprobs;
  double prefill_seconds = 0.0;
  double time_to_first_token_seconds = 0.0;
  double decode_seconds = 0.0;
  int64_t decode_steps = 0;  // tokens whose logits the decode phase gave (decode steps or kept guesses)
  SpeculationStats speculation;
  uint64_t peak_rss_bytes = 0;
  IoStats io;
};

// Called with each generated token as it is sampled; return false to stop early (kCancelled).
using TokenCallback = std::function<bool(int32_t token)>;
// Called with each piece of generated text as soon as it is final (never a broken UTF-8
// sequence, never part of a stop string).
using TextCallback = std::function<void(std::string_view text)>;

// The log-probabilities of one step's logits: log-sum-exp over `logits`, and the `top` most likely
// ids with their log-probabilities, best first (ties: the lower id first).
struct StepLogprobs {
  double log_sum_exp = 0.0;
  std::vector<std::pair<int32_t, float>> top;
};
StepLogprobs step_logprobs(std::span<const float> logits, int top);

// How many leading tokens `a` and `b` share (a session's cache and a new prompt).
int64_t common_prefix_length(std::span<const int32_t> a, std::span<const int32_t> b);

// The most new tokens a prompt of `prompt_len` leaves room for in a cache of `cache_len`: the last
// generated token is never fed back, so n tokens need prompt_len + n - 1 positions. < 1: none fit.
inline int64_t max_new_tokens_that_fit(int64_t prompt_len, int64_t cache_len) {
  return cache_len - prompt_len + 1;
}

// Generates from token ids. Resets the session first unless reuse_cached_prefix. Fails with OutOfRange before any work
// when the prompt plus max_new_tokens exceeds the session's cache (with stop_at_context_end: only
// when the prompt leaves room for no token at all), InvalidArgument for an empty prompt, a token
// outside the vocabulary or bad sampling parameters.
Result<GenerationResult> generate_tokens(LlmSession& session, std::span<const int32_t> prompt,
                                         const GenerationOptions& options, const TokenCallback& on_token = {});

// Encodes `prompt`, generates and streams the decoded text.
Result<GenerationResult> generate_text(LlmSession& session, const Tokenizer& tokenizer, std::string_view prompt,
                                       const GenerationOptions& options, const TextCallback& on_text = {});
// The same from a prompt already encoded (a rendered chat template, a server's token prompt).
Result<GenerationResult> generate_text(LlmSession& session, const Tokenizer& tokenizer,
                                       std::span<const int32_t> prompt_tokens, const GenerationOptions& options,
                                       const TextCallback& on_text = {});

}  // namespace staticlm
