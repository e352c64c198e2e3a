// SPDX-License-Identifier: Apache-2.0
#include "staticlm/server/native_completion_json.h"

namespace staticlm::server {
namespace {

Json probability_json(int32_t id, float logprob, const TokenText& text) {
  const std::string piece = text(id);
  return {{"id", id}, {"token", piece}, {"bytes", token_bytes(piece)}, {"logprob", logprob}};
}

}  // namespace

std::string_view native_stop_type(StopReason reason) {
  switch (reason) {
    case StopReason::kEos:
    case StopReason::kGrammarComplete: return "eos";
    case StopReason::kMaxNewTokens:
    case StopReason::kContextFull: return "limit";
    case StopReason::kStopString: return "word";
    case StopReason::kCancelled: return "none";
  }
  return "none";
}

Json native_probabilities_json(std::span<const TokenLogprob> entries, const TokenText& text) {
  Json out = Json::array();
  for (const TokenLogprob& entry : entries) {
    Json item = probability_json(entry.token, entry.logprob, text);
    Json top = Json::array();
    for (const auto& [id, logprob] : entry.top) {
      top.push_back(probability_json(id, logprob, text));
    }
    item["top_logprobs"] = std::move(top);
    out.push_back(std::move(item));
  }
  return out;
}

Json native_chunk_json(std::string_view content, Json probabilities, const NativeChunkCounts& counts) {
  Json chunk = {{"index", 0},
                {"content", content},
                {"tokens", counts.tokens},
                {"stop", false},
                {"id_slot", counts.slot},
                {"tokens_predicted", counts.predicted},
                {"tokens_evaluated", counts.evaluated}};
  if (!probabilities.is_null()) {
    chunk["completion_probabilities"] = std::move(probabilities);
  }
  return chunk;
}

Json native_final_json(std::string_view content, const NativeCompletionEnd& end, Json probabilities) {
  const GenerationResult& result = *end.result;
  const SamplingParams& s = *end.sampling;
  const auto predicted = static_cast<int64_t>(result.tokens.size());
  const auto evaluated = static_cast<int64_t>(result.prompt_tokens.size());
  Json settings = {{"n_predict", end.n_predict},
                   {"seed", s.seed},
                   {"temperature", s.temperature},
                   {"top_k", s.top_k},
                   {"top_p", s.top_p},
                   {"min_p", s.min_p},
                   {"repeat_penalty", s.repetition_penalty},
                   {"repeat_last_n", s.repetition_window == 0 ? -1 : s.repetition_window},
                   {"presence_penalty", s.presence_penalty},
                   {"frequency_penalty", s.frequency_penalty}};
  Json out = {{"index", 0},
              {"content", content},
              {"tokens", end.unsent_tokens != nullptr ? Json(*end.unsent_tokens)
                         : end.return_tokens          ? Json(result.tokens)
                                                      : Json::array()},
              {"id_slot", end.slot},
              {"stop", true},
              {"model", end.model},
              {"tokens_predicted", predicted},
              {"tokens_evaluated", evaluated},
              {"generation_settings", std::move(settings)},
              {"has_new_line", result.text.find('\n') != std::string::npos},
              {"truncated", false},
              {"stop_type", native_stop_type(result.stop_reason)},
              {"stopping_word", result.stop_string},
              {"tokens_cached", result.cached_prompt_tokens},
              {"timings", timings_json(result)}};
  if (!probabilities.is_null()) {
    out["completion_probabilities"] = std::move(probabilities);
  }
  return out;
}

}  // namespace staticlm::server
