// SPDX-License-Identifier: Apache-2.0
// llama-server's own /completion response shapes, for its clients (its web UI's older builds,
// llama.cpp's examples, scripts written against it): the whole reply or a stream's chunks, each
// `{"content", "stop", "tokens", ...}`, the last with `stop: true`, `stop_type`, `timings` and
// `generation_settings`; `completion_probabilities` with n_probs. The OpenAI shapes are in
// openai_json.h.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/server/openai_json.h"

namespace staticlm::server {

// What the last object of a /completion reply reports besides the text.
struct NativeCompletionEnd {
  const GenerationResult* result = nullptr;
  const SamplingParams* sampling = nullptr;
  int64_t n_predict = -1;  // as asked; -1 for no limit
  bool return_tokens = false;
  std::string_view model;
  int64_t slot = -1;  // the slot (session) that generated it
  // A stream's last event: the ids no chunk carried (a stop string's, or tokens that showed no
  // text), its `tokens` then; null for a whole reply, whose `tokens` are all of them with
  // return_tokens.
  const std::vector<int32_t>* unsent_tokens = nullptr;
};

// llama-server's stop_type: "eos" (end of sequence, or a grammar that is complete), "limit"
// (n_predict or the context), "word" (a stop string), "none" (cancelled).
std::string_view native_stop_type(StopReason reason);

// `completion_probabilities` for `entries`: [{id, token, bytes, logprob, top_logprobs: [{id,
// token, bytes, logprob}]}].
Json native_probabilities_json(std::span<const TokenLogprob> entries, const TokenText& text);

// What a streamed chunk reports besides its text.
struct NativeChunkCounts {
  std::span<const int32_t> tokens;  // the ids sampled since the previous chunk
  int64_t predicted = 0;            // tokens generated so far
  int64_t evaluated = 0;            // the prompt's tokens
  int64_t slot = -1;
};

// One streamed chunk, as llama-server's: {"index": 0, "content", "tokens": [ids], "stop": false,
// "id_slot", "tokens_predicted", "tokens_evaluated"}, and `completion_probabilities` when
// `probabilities` is not null.
Json native_chunk_json(std::string_view content, Json probabilities, const NativeChunkCounts& counts);

// The whole reply, or a stream's last chunk (its `content` then empty): `stop: true` and what
// `end` holds.
Json native_final_json(std::string_view content, const NativeCompletionEnd& end, Json probabilities);

}  // namespace staticlm::server
