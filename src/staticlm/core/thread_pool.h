// ThreadPool: a fixed set of worker threads created once; parallel_for splits a range over
// them and the calling thread, and returns when every chunk has run. No thread is created per
// call. The workers serve one parallel_for at a time: a call made while another thread's call
// holds them runs its whole range on the calling thread instead of waiting, so sessions that
// share a pool run concurrently (each at least on its own thread) and never queue behind
// each other.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace staticlm {

class ThreadPool {
 public:
  // num_threads counts the calling thread: 1 means run everything inline.
  // 0 picks std::thread::hardware_concurrency().
  explicit ThreadPool(int num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls body(begin, end) over disjoint chunks covering [0, count), each at least
  // min_chunk long (except possibly the last).
  void parallel_for(int64_t count, int64_t min_chunk, const std::function<void(int64_t begin, int64_t end)>& body);

 private:
  void worker_loop();
  void run_chunks(std::unique_lock<std::mutex>& lock);

  std::vector<std::thread> workers_;
  std::mutex call_mutex_;  // held by the parallel_for that owns the workers
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  // The parallel_for the workers serve, guarded by mutex_.
  struct Job {
    const std::function<void(int64_t, int64_t)>* body = nullptr;
    int64_t count = 0;     // the range [0, count)
    int64_t chunk = 0;     // elements per chunk
    int64_t chunks = 0;    // how many chunks
    int64_t next = 0;      // the next chunk to hand out
    int64_t finished = 0;  // chunks done
  };
  Job job_;
  uint64_t generation_ = 0;  // bumped per job, so a worker takes each job once
  bool stopping_ = false;
};

}  // namespace staticlm
