#include "staticlm/core/thread_pool.h"

#include <algorithm>

namespace staticlm {
namespace {

// (a + b - 1) / b overflows for a near INT64_MAX; this does not. Requires a >= 0, b > 0.
int64_t ceil_div(int64_t a, int64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) {
    num_threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }
  workers_.reserve(static_cast<size_t>(num_threads - 1));
  for (int i = 1; i < num_threads; ++i) {
    workers_.emplace_back([this] { worker_loop(); });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& worker : workers_) {
    worker.join();
  }
}

void ThreadPool::run_chunks(std::unique_lock<std::mutex>& lock) {
  while (job_.next < job_.chunks) {
    const int64_t chunk = job_.next++;
    const auto* body = job_.body;
    const int64_t begin = chunk * job_.chunk;
    // Written so that no intermediate exceeds the count, which may be close to INT64_MAX.
    const int64_t end = begin + std::min(job_.chunk, job_.count - begin);
    lock.unlock();
    (*body)(begin, end);
    lock.lock();
    if (++job_.finished == job_.chunks) {
      work_done_.notify_all();
    }
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen_generation = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    work_ready_.wait(lock, [&] { return stopping_ || generation_ != seen_generation; });
    if (stopping_) {
      return;
    }
    seen_generation = generation_;
    run_chunks(lock);
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
  std::unique_lock<std::mutex> lock(mutex_);
  // A few chunks per thread balance uneven work without much scheduling overhead.
  const int64_t chunk = std::max(min_chunk, ceil_div(count, threads * 4));
  job_ = Job{&body, count, chunk, ceil_div(count, chunk), 0, 0};
  ++generation_;
  work_ready_.notify_all();
  run_chunks(lock);
  work_done_.wait(lock, [&] { return job_.finished == job_.chunks; });
  job_.body = nullptr;
}

}  // namespace staticlm
