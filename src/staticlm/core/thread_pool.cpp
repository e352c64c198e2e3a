// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/thread_pool.h"

#include <algorithm>
#include <chrono>

#include "staticlm/core/cpu_topology.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace staticlm {
namespace {

// (a + b - 1) / b overflows for a near INT64_MAX; this does not. Requires a >= 0, b > 0.
int64_t ceil_div(int64_t a, int64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

constexpr uint64_t pack_claim(uint32_t tag, uint64_t next, uint64_t chunks) {
  return (static_cast<uint64_t>(tag) << 32) | (next << 16) | chunks;
}
constexpr uint32_t claim_tag(uint64_t word) {
  return static_cast<uint32_t>(word >> 32);
}
constexpr uint64_t claim_next(uint64_t word) {
  return (word >> 16) & 0xffff;
}
constexpr uint64_t claim_chunks(uint64_t word) {
  return word & 0xffff;
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) {
    num_threads = default_thread_count();
  }
  num_threads = std::min(num_threads, kMaxThreads);
  workers_.reserve(static_cast<size_t>(num_threads - 1));
  for (int i = 1; i < num_threads; ++i) {
    workers_.emplace_back([this] { worker_loop(); });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_.store(true);
  }
  work_ready_.notify_all();
  for (std::thread& worker : workers_) {
    worker.join();
  }
}

void ThreadPool::run_chunks(uint32_t tag) {
  uint64_t word = claim_.load(std::memory_order_acquire);
  while (claim_tag(word) == tag && claim_next(word) < claim_chunks(word)) {
    if (!claim_.compare_exchange_weak(word, word + (uint64_t{1} << 16), std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
      continue;  // `word` now holds the current value
    }
    const auto chunk_index = static_cast<int64_t>(claim_next(word));
    const bool big = chunk_index < big_chunks_;
    const int64_t begin = big ? chunk_index * chunk_ : big_chunks_ * chunk_ + (chunk_index - big_chunks_) * tail_chunk_;
    // Written so that no intermediate exceeds the count, which may be close to INT64_MAX.
    const int64_t end = begin + std::min(big ? chunk_ : tail_chunk_, count_ - begin);
    (*body_)(begin, end);
    finished_.fetch_add(1, std::memory_order_release);
    word = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker_loop() {
  uint32_t seen_tag = 0;
  while (true) {
    uint64_t word = claim_.load(std::memory_order_acquire);
    if (claim_tag(word) == seen_tag) {
      const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
      for (int polls = 1; claim_tag(word) == seen_tag && !stopping_.load(std::memory_order_relaxed); ++polls) {
        cpu_relax();
        if (polls % 256 == 0) {
          // With more threads than cores a poller may hold the core a busy thread needs.
          std::this_thread::yield();
        }
        if (polls % 256 == 0 && std::chrono::steady_clock::now() > spin_until) {
          sleepers_.fetch_add(1);
          std::unique_lock<std::mutex> lock(mutex_);
          work_ready_.wait(lock, [&] { return stopping_.load() || claim_tag(claim_.load()) != seen_tag; });
          sleepers_.fetch_sub(1);
        }
        word = claim_.load(std::memory_order_acquire);
      }
    }
    if (stopping_.load()) {
      return;
    }
    seen_tag = claim_tag(word);
    run_chunks(seen_tag);
  }
}

void ThreadPool::parallel_for(int64_t count, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& body) {
  if (count <= 0) {
    return;
  }
  min_chunk = std::max<int64_t>(1, min_chunk);
  const int64_t threads = num_threads();
  if (threads == 1 || count <= min_chunk) {
    body(0, count);
    return;
  }
  std::unique_lock<std::mutex> call_lock(call_mutex_, std::try_to_lock);
  if (!call_lock.owns_lock()) {
    // Another caller (another session) has the workers; a nested call from inside a body lands
    // here too, instead of deadlocking.
    body(0, count);
    return;
  }
  // A few chunks per thread balance uneven work without much scheduling overhead. The last
  // threads x chunk elements go in chunks a quarter as long, so the thread that claims the last
  // one keeps the others waiting for less: a prefill's GEMM items are long (SmolLM's swiglu_linear
  // has 24, claimed 3 at a time), and the waits at their ends show in `staticlm bench --ops`.
  // At most 3 * threads big chunks and 4 * threads + 4 short ones, which the claim word's 16 bits
  // hold.
  const int64_t chunk = std::max(min_chunk, ceil_div(count, threads * 4));
  int64_t big_chunks = ceil_div(count, chunk);
  int64_t tail_chunk = chunk;
  int64_t chunks = big_chunks;
  if (count / chunk > 2 * threads) {  // so threads * chunk < count / 2: no overflow below
    big_chunks = (count - threads * chunk) / chunk;
    tail_chunk = std::max(min_chunk, ceil_div(chunk, 4));
    chunks = big_chunks + ceil_div(count - big_chunks * chunk, tail_chunk);
  }
  body_ = &body;
  count_ = count;
  chunk_ = chunk;
  big_chunks_ = big_chunks;
  tail_chunk_ = tail_chunk;
  finished_.store(0, std::memory_order_relaxed);
  // Tag 0 is what a fresh worker has seen; skip it when the counter wraps.
  last_tag_ = last_tag_ == UINT32_MAX ? 1 : last_tag_ + 1;
  claim_.store(pack_claim(last_tag_, 0, static_cast<uint64_t>(chunks)));
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    work_ready_.notify_all();
  }
  run_chunks(last_tag_);
  for (int polls = 1; finished_.load(std::memory_order_acquire) != chunks; ++polls) {
    cpu_relax();
    if (polls % 4096 == 0) {
      std::this_thread::yield();  // a worker lost its core: let it have this one
    }
  }
  body_ = nullptr;
  barriers_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace staticlm
