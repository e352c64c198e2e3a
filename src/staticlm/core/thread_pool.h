// SPDX-License-Identifier: Apache-2.0
// ThreadPool: a fixed set of worker threads created once; parallel_for splits a range over
// them and the calling thread, and returns when every chunk has run. No thread is created per
// call. The workers serve one parallel_for at a time: a call made while another thread's call
// holds them runs its whole range on the calling thread instead of waiting, so sessions that
// share a pool run concurrently (each at least on its own thread) and never queue behind
// each other.
//
// Built for latency, since a decode step is hundreds of short calls: chunks are claimed with
// one compare-and-swap, the caller works too and spins for the last chunk, and idle workers
// spin for a short while (kSpinMicros) before sleeping on a condition variable, so a call that
// follows another closely starts without a wake-up. Each call that runs on more than one thread
// ends in a barrier; barriers() counts them (the bench reports them per token).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace staticlm {

class ThreadPool {
 public:
  // How long an idle worker keeps polling for the next call before it sleeps.
  static constexpr int kSpinMicros = 2000;

  // num_threads counts the calling thread: 1 means run everything inline.
  // 0 picks default_thread_count() (cpu_topology.h): the fast physical cores; at most kMaxThreads.
  explicit ThreadPool(int num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  static constexpr int kMaxThreads = 1024;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls body(begin, end) over disjoint chunks covering [0, count), each at least
  // min_chunk long (except possibly the last).
  void parallel_for(int64_t count, int64_t min_chunk, const std::function<void(int64_t begin, int64_t end)>& body);

  // How many parallel_for calls have run on more than one thread (each ends in a barrier).
  uint64_t barriers() const { return barriers_.load(std::memory_order_relaxed); }

 private:
  void worker_loop();
  // Claims and runs chunks of the job tagged `tag` until none is left.
  void run_chunks(uint32_t tag);

  std::vector<std::thread> workers_;
  std::mutex call_mutex_;  // held by the parallel_for that owns the workers

  // The job: written by the owning caller before it publishes the claim word, read by a worker
  // only after it claimed a chunk (so never while being rewritten: the next job waits for every
  // claimed chunk to finish).
  const std::function<void(int64_t, int64_t)>* body_ = nullptr;
  int64_t count_ = 0;       // the range [0, count)
  int64_t chunk_ = 0;       // elements per chunk of the first chunks
  int64_t big_chunks_ = 0;  // how many of those; the rest are tail_chunk_ long
  int64_t tail_chunk_ = 0;
  // The claim word: job tag (32 bits) | next chunk (16) | chunks (16). A worker holding an old
  // tag fails its compare-and-swap, so it never runs a chunk of a job it did not see published.
  alignas(64) std::atomic<uint64_t> claim_{0};
  alignas(64) std::atomic<int64_t> finished_{0};  // chunks of the current job done
  alignas(64) std::atomic<uint64_t> barriers_{0};
  uint32_t last_tag_ = 0;  // the owning caller's

  // Sleeping: a worker counts itself in sleepers_ before it waits, and a caller that sees a
  // sleeper after publishing notifies under mutex_, so no wake-up is lost.
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace staticlm
