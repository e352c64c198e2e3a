// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/core/cpu_topology.h"

namespace staticlm {
namespace {

using Range = std::pair<int64_t, int64_t>;

// Records every body call so that coverage and chunk sizes can be checked afterwards.
class RangeRecorder {
 public:
  void record(int64_t begin, int64_t end) {
    std::lock_guard<std::mutex> lock(mutex_);
    ranges_.emplace_back(begin, end);
  }
  std::vector<Range> sorted() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<Range> out = ranges_;
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::mutex mutex_;
  std::vector<Range> ranges_;
};

// Checks that the ranges tile [0, count) and that every range but the last is at least
// min_chunk long.
void expect_tiling(const std::vector<Range>& ranges, int64_t count, int64_t min_chunk) {
  if (count == 0) {
    EXPECT_TRUE(ranges.empty());
    return;
  }
  ASSERT_FALSE(ranges.empty());
  int64_t expected_begin = 0;
  for (const Range& range : ranges) {
    ASSERT_EQ(range.first, expected_begin) << "gap or overlap for count " << count;
    ASSERT_LT(range.first, range.second) << "empty chunk for count " << count;
    if (range.second != count) {
      EXPECT_GE(range.second - range.first, std::max<int64_t>(1, min_chunk))
          << "chunk [" << range.first << "," << range.second << ") of count " << count;
    }
    expected_begin = range.second;
  }
  EXPECT_EQ(expected_begin, count);
}

TEST(ThreadPoolTest, NumThreads) {
  EXPECT_EQ(ThreadPool(1).num_threads(), 1);
  EXPECT_EQ(ThreadPool(3).num_threads(), 3);
  EXPECT_EQ(ThreadPool(0).num_threads(), default_thread_count());
}

TEST(ThreadPoolTest, CoversEveryIndexExactlyOnce) {
  const std::vector<int64_t> counts = {0, 1, 2, 3, 5, 7, 8, 9, 64, 100, 1000, 4097};
  const std::vector<int64_t> min_chunks = {-5, 0, 1, 2, 3, 16, 100, 1000, 5000};
  for (int threads : {1, 2, 3, 4, 8}) {
    ThreadPool pool(threads);
    for (int64_t count : counts) {
      for (int64_t min_chunk : min_chunks) {
        SCOPED_TRACE(testing::Message() << "threads " << threads << " count " << count << " min_chunk " << min_chunk);
        std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
        RangeRecorder recorder;
        pool.parallel_for(count, min_chunk, [&](int64_t begin, int64_t end) {
          recorder.record(begin, end);
          for (int64_t i = std::max<int64_t>(begin, 0); i < std::min(end, count); ++i) {
            hits[static_cast<size_t>(i)].fetch_add(1);
          }
        });
        for (int64_t i = 0; i < count; ++i) {
          ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "index " << i;
        }
        expect_tiling(recorder.sorted(), count, min_chunk);
      }
    }
  }
}

TEST(ThreadPoolTest, NegativeCountRunsNothing) {
  ThreadPool pool(4);
  std::atomic<int> calls{0};
  pool.parallel_for(-10, 1, [&](int64_t, int64_t) { calls.fetch_add(1); });
  EXPECT_EQ(calls.load(), 0);
}

TEST(ThreadPoolTest, SingleThreadRunsInlineAsOneChunk) {
  ThreadPool pool(1);
  RangeRecorder recorder;
  std::set<std::thread::id> ids;
  pool.parallel_for(1000, 1, [&](int64_t begin, int64_t end) {
    recorder.record(begin, end);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(recorder.sorted(), (std::vector<Range>{{0, 1000}}));
  EXPECT_EQ(ids, (std::set<std::thread::id>{std::this_thread::get_id()}));
}

// The work at the end of a range goes in shorter chunks, so that the thread claiming the last
// one does not keep the others waiting for a whole chunk.
TEST(ThreadPoolTest, TheLastChunksAreAQuarterAsLong) {
  for (int threads : {2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t count : {int64_t{96}, int64_t{1000}, int64_t{12345}}) {
      SCOPED_TRACE(testing::Message() << "threads " << threads << " count " << count);
      RangeRecorder recorder;
      pool.parallel_for(count, 1, [&](int64_t begin, int64_t end) { recorder.record(begin, end); });
      const std::vector<Range> ranges = recorder.sorted();
      expect_tiling(ranges, count, 1);
      const int64_t chunk = (count + threads * 4 - 1) / (threads * 4);
      EXPECT_EQ(ranges.front().second - ranges.front().first, chunk);
      int64_t short_items = 0;
      for (const Range& range : ranges) {
        if (range.second - range.first <= (chunk + 3) / 4) {
          short_items += range.second - range.first;
        }
      }
      // At least the last threads x chunk items, at most those plus what did not fill a chunk.
      EXPECT_GE(short_items, std::min(count, threads * chunk));
      EXPECT_LT(short_items, (threads + 1) * chunk);
    }
  }
}

TEST(ThreadPoolTest, SumOverAMillionElements) {
  constexpr int64_t kCount = 1'000'000;
  std::vector<int64_t> values(kCount);
  for (int64_t i = 0; i < kCount; ++i) {
    values[static_cast<size_t>(i)] = 3 * i + 1;
  }
  // sum(3i + 1) for i in [0, n) = 3 n (n - 1) / 2 + n
  const int64_t expected = 3 * kCount * (kCount - 1) / 2 + kCount;
  for (int threads : {1, 2, 4, 7}) {
    ThreadPool pool(threads);
    for (int64_t min_chunk : {1, 1000, 333'333}) {
      std::atomic<int64_t> total{0};
      pool.parallel_for(kCount, min_chunk, [&](int64_t begin, int64_t end) {
        int64_t partial = 0;
        for (int64_t i = begin; i < end; ++i) {
          partial += values[static_cast<size_t>(i)];
        }
        total.fetch_add(partial);
      });
      EXPECT_EQ(total.load(), expected) << "threads " << threads << " min_chunk " << min_chunk;
    }
  }
}

TEST(ThreadPoolTest, RepeatedCallsReuseTheSameThreads) {
  constexpr int kThreads = 4;
  constexpr int64_t kCount = 1000;
  ThreadPool pool(kThreads);
  std::mutex mutex;
  std::set<std::thread::id> ids;
  for (int call = 0; call < 1000; ++call) {
    std::vector<std::atomic<int>> hits(kCount);
    pool.parallel_for(kCount, 1, [&](int64_t begin, int64_t end) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        ids.insert(std::this_thread::get_id());
      }
      for (int64_t i = begin; i < end; ++i) {
        hits[static_cast<size_t>(i)].fetch_add(1);
      }
    });
    for (int64_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "call " << call << " index " << i;
    }
  }
  // A thread per call would show up as up to 1000 distinct ids.
  EXPECT_GE(ids.size(), 1u);
  EXPECT_LE(ids.size(), static_cast<size_t>(kThreads));
}

TEST(ThreadPoolTest, ConcurrentCallersEachCoverTheirRange) {
  constexpr int64_t kCount = 2000;
  constexpr int kCallsPerCaller = 200;
  ThreadPool pool(4);
  std::atomic<int> bad_coverage{0};
  auto caller = [&]() {
    for (int call = 0; call < kCallsPerCaller; ++call) {
      std::vector<std::atomic<int>> hits(kCount);
      pool.parallel_for(kCount, 7, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          hits[static_cast<size_t>(i)].fetch_add(1);
        }
      });
      for (const std::atomic<int>& hit : hits) {
        if (hit.load() != 1) {
          bad_coverage.fetch_add(1);
        }
      }
    }
  };
  std::thread first(caller);
  std::thread second(caller);
  first.join();
  second.join();
  EXPECT_EQ(bad_coverage.load(), 0);
}

TEST(ThreadPoolTest, ACallerThatFindsThePoolBusyRunsInlineInsteadOfWaiting) {
  ThreadPool pool(2);
  std::mutex mutex;
  std::condition_variable changed;
  bool first_inside = false;
  bool second_done = false;
  std::thread first([&] {
    pool.parallel_for(2, 1, [&](int64_t, int64_t) {
      std::unique_lock<std::mutex> lock(mutex);
      first_inside = true;
      changed.notify_all();
      // Holds the workers until the second caller has finished on its own thread.
      changed.wait(lock, [&] { return second_done; });
    });
  });
  {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return first_inside; });
  }
  std::set<std::thread::id> ran_on;
  pool.parallel_for(1000, 1, [&](int64_t, int64_t) { ran_on.insert(std::this_thread::get_id()); });
  {
    std::lock_guard<std::mutex> lock(mutex);
    second_done = true;
  }
  changed.notify_all();
  first.join();
  EXPECT_EQ(ran_on, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(ThreadPoolTest, ANestedCallRunsInline) {
  ThreadPool pool(4);
  std::atomic<int64_t> total{0};
  pool.parallel_for(8, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      pool.parallel_for(100, 1, [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
    }
  });
  EXPECT_EQ(total.load(), 800);
}

TEST(ThreadPoolTest, HugeCountDoesNotOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  ThreadPool pool(4);
  for (int64_t min_chunk : {int64_t{1}, kMax / 3, kMax / 2, kMax - 1}) {
    SCOPED_TRACE(testing::Message() << "min_chunk " << min_chunk);
    RangeRecorder recorder;
    pool.parallel_for(kMax, min_chunk, [&](int64_t begin, int64_t end) { recorder.record(begin, end); });
    expect_tiling(recorder.sorted(), kMax, min_chunk);
  }
}

// Counts worker threads that have fully exited: a thread_local's destructor runs at thread exit.
std::atomic<int> g_exited_threads{0};
struct ExitCounter {
  bool armed = false;
  ~ExitCounter() {
    if (armed) {
      g_exited_threads.fetch_add(1);
    }
  }
};
thread_local ExitCounter t_exit_counter;

TEST(ThreadPoolTest, DestructionJoinsWorkers) {
  const std::thread::id main_id = std::this_thread::get_id();
  for (int round = 0; round < 20; ++round) {
    g_exited_threads.store(0);
    std::mutex mutex;
    std::set<std::thread::id> worker_ids;
    {
      ThreadPool pool(4);
      // Enough calls that the workers almost surely take part; only those that did are counted.
      for (int call = 0; call < 50; ++call) {
        pool.parallel_for(400, 1, [&](int64_t, int64_t) {
          if (std::this_thread::get_id() != main_id) {
            t_exit_counter.armed = true;
            std::lock_guard<std::mutex> lock(mutex);
            worker_ids.insert(std::this_thread::get_id());
          }
        });
      }
    }
    // join() returns only after the thread, thread_local destructors included, has finished.
    EXPECT_EQ(g_exited_threads.load(), static_cast<int>(worker_ids.size())) << "round " << round;
  }
}

TEST(ThreadPoolTest, IdlePoolsConstructAndDestroy) {
  for (int round = 0; round < 50; ++round) {
    ThreadPool pool(1 + round % 6);
    EXPECT_EQ(pool.num_threads(), 1 + round % 6);
  }
}

TEST(ThreadPoolTest, CountsABarrierPerCallThatRanOnSeveralThreads) {
  ThreadPool pool(2);
  EXPECT_EQ(pool.barriers(), 0u);
  pool.parallel_for(100, 1, [](int64_t, int64_t) {});
  EXPECT_EQ(pool.barriers(), 1u);
  pool.parallel_for(100, 1000, [](int64_t, int64_t) {});  // one chunk: inline, no barrier
  EXPECT_EQ(pool.barriers(), 1u);
  ThreadPool inline_pool(1);
  inline_pool.parallel_for(100, 1, [](int64_t, int64_t) {});
  EXPECT_EQ(inline_pool.barriers(), 0u);
}

TEST(ThreadPoolTest, WorkersThatFellAsleepWakeForTheNextCall) {
  ThreadPool pool(3);
  for (int round = 0; round < 3; ++round) {
    // Longer than the spin window, so the workers are asleep on the condition variable.
    std::this_thread::sleep_for(std::chrono::microseconds(ThreadPool::kSpinMicros * 5));
    std::mutex mutex;
    std::set<std::thread::id> threads;
    std::atomic<int64_t> covered{0};
    pool.parallel_for(64, 1, [&](int64_t begin, int64_t end) {
      covered.fetch_add(end - begin);
      // Long enough that a woken worker claims a chunk before the caller runs out of them.
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      std::lock_guard<std::mutex> lock(mutex);
      threads.insert(std::this_thread::get_id());
    });
    EXPECT_EQ(covered.load(), 64) << "round " << round;
    EXPECT_GT(threads.size(), 1u) << "round " << round << ": no worker woke";
  }
}

}  // namespace
}  // namespace staticlm
