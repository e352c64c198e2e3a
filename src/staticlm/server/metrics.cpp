// SPDX-License-Identifier: Apache-2.0
#include "staticlm/server/metrics.h"

#include <cstdio>

#include "staticlm/core/status.h"

namespace staticlm::server {
namespace {

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += str_cat("# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

void sample(std::string& out, std::string_view name, double value) {
  char number[64];
  std::snprintf(number, sizeof(number), "%.17g", value);
  out += str_cat(name, " ", number, "\n");
}

double rate(int64_t tokens, double seconds) {
  return seconds > 0.0 ? static_cast<double>(tokens) / seconds : 0.0;
}

}  // namespace

void Metrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{endpoint, status}];
}

void Metrics::count_generation(int64_t prompt_tokens, int64_t cached_tokens, int64_t generated_tokens,
                               double prefill_seconds, double decode_seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  prompt_tokens_ += prompt_tokens;
  cached_tokens_ += cached_tokens;
  generated_tokens_ += generated_tokens;
  ++generations_;
  prefill_seconds_ += prefill_seconds;
  decode_seconds_ += decode_seconds;
}

std::string Metrics::render(int sessions, int busy, int queued) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  header(out, "staticlm_requests_total", "counter", "HTTP requests answered, by endpoint and status.");
  for (const auto& [key, count] : requests_) {
    out += str_cat("staticlm_requests_total{endpoint=\"", key.first, "\",status=\"", key.second, "\"} ", count, "\n");
  }
  header(out, "staticlm_generations_total", "counter", "Completions generated (finished or stopped).");
  sample(out, "staticlm_generations_total", static_cast<double>(generations_));
  header(out, "staticlm_generations_cancelled_total", "counter", "Generations stopped because the client went away.");
  sample(out, "staticlm_generations_cancelled_total", static_cast<double>(cancelled_.load()));
  header(out, "staticlm_prompt_tokens_total", "counter", "Prompt tokens prefilled (cached ones not counted).");
  sample(out, "staticlm_prompt_tokens_total", static_cast<double>(prompt_tokens_));
  header(out, "staticlm_prompt_tokens_cached_total", "counter", "Prompt tokens found in a session's cache.");
  sample(out, "staticlm_prompt_tokens_cached_total", static_cast<double>(cached_tokens_));
  header(out, "staticlm_generated_tokens_total", "counter", "Tokens generated.");
  sample(out, "staticlm_generated_tokens_total", static_cast<double>(generated_tokens_));
  header(out, "staticlm_prompt_seconds_total", "counter", "Time spent prefilling prompts.");
  sample(out, "staticlm_prompt_seconds_total", prefill_seconds_);
  header(out, "staticlm_generation_seconds_total", "counter", "Time spent generating tokens.");
  sample(out, "staticlm_generation_seconds_total", decode_seconds_);
  header(out, "staticlm_prompt_tokens_per_second", "gauge", "Prefill throughput over all requests so far.");
  sample(out, "staticlm_prompt_tokens_per_second", rate(prompt_tokens_, prefill_seconds_));
  header(out, "staticlm_generation_tokens_per_second", "gauge", "Decode throughput over all requests so far.");
  sample(out, "staticlm_generation_tokens_per_second", rate(generated_tokens_, decode_seconds_));
  header(out, "staticlm_sessions", "gauge", "Sessions (--parallel).");
  sample(out, "staticlm_sessions", sessions);
  header(out, "staticlm_requests_processing", "gauge", "Requests holding a session.");
  sample(out, "staticlm_requests_processing", busy);
  header(out, "staticlm_requests_queued", "gauge", "Requests waiting for a session (the queue depth).");
  sample(out, "staticlm_requests_queued", queued);
  return out;
}

}  // namespace staticlm::server
