// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/cpu/kernels/machine_peaks.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "staticlm/backends/cpu/kernels/peak_loops.h"
#include "staticlm/core/aligned_buffer.h"

namespace staticlm::cpu {
namespace {

// Enough multiply-adds per chunk that claiming it costs nothing; enough chunks that both
// threads stay busy to the end.
constexpr int64_t kFmaChunks = 64;
constexpr int64_t kStepsPerChunk = 1 << 16;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int64_t fma_steps_scalar(int64_t steps, float* sink) {
  float acc[kFmaChains];
  for (int c = 0; c < kFmaChains; ++c) {
    acc[c] = static_cast<float>(c);
  }
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (float& value : acc) {
      value = value * 0.999f + 1e-3f;
    }
  }
  for (float value : acc) {
    *sink += value;
  }
  return steps * kFmaChains;
}

// Eight independent sums so no add waits on the one before it.
uint64_t sum_words_scalar(const uint64_t* data, size_t count) {
  uint64_t s[8] = {};
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    for (size_t k = 0; k < 8; ++k) {
      s[k] += data[i + k];
    }
  }
  for (; i < count; ++i) {
    s[0] += data[i];
  }
  uint64_t total = 0;
  for (uint64_t v : s) {
    total += v;
  }
  return total;
}

Result<double> measure_read_bandwidth(ThreadPool& pool, CpuFeatures allowed, size_t bytes, int passes) {
  const size_t words = bytes / sizeof(uint64_t);
  if (words == 0 || passes <= 0) {
    return invalid_argument("read bandwidth: need a buffer of at least 8 bytes and one pass, found ", bytes,
                            " bytes and ", passes, " passes");
  }
  // Huge pages, as the mapped program's weights get (format/mapped_file): with 4 KiB pages the
  // probe reads slower than a decode step streams, and the roofline fraction would read high.
  auto buffer = AlignedBuffer::allocate(words * sizeof(uint64_t), kDefaultAlignment, PageHint::kHuge);
  if (!buffer.ok()) {
    return buffer.status().with_context("read bandwidth: the probe buffer");
  }
  uint64_t* const data = reinterpret_cast<uint64_t*>(buffer->data());
  std::fill(data, data + words, uint64_t{1});  // touched, so no pass pays for page faults
  // Chunks of 1 MiB, claimed by whichever thread is free.
  const int64_t chunk_words = int64_t{1} << 17;
  const int64_t chunks = (static_cast<int64_t>(words) + chunk_words - 1) / chunk_words;
  const SumWordsFn sum_words = widest_sum_words(allowed);
  double best = 0.0;
  for (int pass = 0; pass < passes; ++pass) {
    std::atomic<uint64_t> total{0};
    const auto start = std::chrono::steady_clock::now();
    pool.parallel_for(chunks, 1, [&](int64_t begin, int64_t end) {
      const size_t first = static_cast<size_t>(begin * chunk_words);
      const size_t last = std::min(words, static_cast<size_t>(end * chunk_words));
      total.fetch_add(sum_words(data + first, last - first), std::memory_order_relaxed);
    });
    const double seconds = seconds_since(start);
    if (total.load() != words) {  // every word is 1: a wrong sum means a wrong split
      return internal_error("read bandwidth: summed ", total.load(), " words of ", words);
    }
    best = std::max(best, static_cast<double>(words * sizeof(uint64_t)) / seconds);
  }
  return best;
}

double measure_fma_peak(ThreadPool& pool, CpuFeatures allowed, int passes) {
  const FmaStepsFn fma_steps = widest_fma_steps(allowed);
  double best = 0.0;
  for (int pass = 0; pass < std::max(1, passes); ++pass) {
    std::atomic<int64_t> lane_fmas{0};
    const auto start = std::chrono::steady_clock::now();
    pool.parallel_for(kFmaChunks, 1, [&](int64_t begin, int64_t end) {
      float sink = 0.0f;
      int64_t done = 0;
      for (int64_t chunk = begin; chunk < end; ++chunk) {
        done += fma_steps(kStepsPerChunk, &sink);
      }
      // The sum is finite and positive; the comparison keeps it (and the work) alive.
      lane_fmas.fetch_add(sink > -1.0f ? done : 0, std::memory_order_relaxed);
    });
    best = std::max(best, 2.0 * static_cast<double>(lane_fmas.load()) / seconds_since(start));
  }
  return best;
}

}  // namespace staticlm::cpu
