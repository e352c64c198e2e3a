// SPDX-License-Identifier: Apache-2.0
// What GET /metrics reports, in Prometheus' text format: requests by endpoint and status, tokens
// prompted, cached and generated, the time spent on each, sessions busy and requests queued.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace staticlm::server {

class Metrics {
 public:
  void count_request(const std::string& endpoint, int status);
  // One finished generation: tokens prefilled (not counting cached ones) and generated.
  void count_generation(int64_t prompt_tokens, int64_t cached_tokens, int64_t generated_tokens, double prefill_seconds,
                        double decode_seconds);
  void count_cancelled() { cancelled_.fetch_add(1, std::memory_order_relaxed); }

  std::string render(int sessions, int busy, int queued) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  int64_t prompt_tokens_ = 0;
  int64_t cached_tokens_ = 0;
  int64_t generated_tokens_ = 0;
  int64_t generations_ = 0;
  double prefill_seconds_ = 0.0;
  double decode_seconds_ = 0.0;
  std::atomic<uint64_t> cancelled_{0};
};

}  // namespace staticlm::server
