// SPDX-License-Identifier: Apache-2.0
// Test helpers for fd-backed allocators (shm, rpcmem): map the fd a lookup() reports, the way
// another process or a driver would, and record what the allocator logs.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "staticlm/backends/shm/shared_memory_allocator.h"
#include "staticlm/core/logging.h"

namespace staticlm::testing {

// Maps `bytes` of `fd` from `offset` (any offset: the mapping starts at the page below it).
class FdWindow {
 public:
  FdWindow(int fd, uint64_t offset, size_t bytes) {
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t start = offset & ~(page - 1);
    delta_ = static_cast<size_t>(offset - start);
    length_ = delta_ + bytes;
    void* mapped = mmap(nullptr, length_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(start));
    mapping_ = mapped == MAP_FAILED ? nullptr : static_cast<uint8_t*>(mapped);
  }
  ~FdWindow() {
    if (mapping_ != nullptr) {
      munmap(mapping_, length_);
    }
  }
  FdWindow(const FdWindow&) = delete;
  FdWindow& operator=(const FdWindow&) = delete;

  bool ok() const { return mapping_ != nullptr; }
  uint8_t* data() const { return mapping_ + delta_; }

 private:
  uint8_t* mapping_ = nullptr;
  size_t delta_ = 0;
  size_t length_ = 0;
};

inline uint8_t pattern_byte(size_t index, uint8_t seed) {
  return static_cast<uint8_t>((index * 131u + seed) & 0xFF);
}

// Writes a pattern through `pointer`, checks it through an independent mapping of the fd that
// lookup(pointer) reports, then writes through that mapping and checks it through `pointer`.
inline void expect_shared_through_fd(const SharedMemoryAllocator& allocator, uint8_t* pointer, size_t bytes,
                                     uint8_t seed) {
  auto info = allocator.lookup(pointer);
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  ASSERT_GE(info->fd, 0);
  ASSERT_GE(info->size, bytes);
  struct stat file {};
  ASSERT_EQ(fstat(info->fd, &file), 0) << std::strerror(errno);
  EXPECT_GE(static_cast<uint64_t>(file.st_size), info->offset + bytes) << "the fd is shorter than the block";
  for (size_t i = 0; i < bytes; ++i) {
    pointer[i] = pattern_byte(i, seed);
  }
  FdWindow window(info->fd, info->offset, bytes);
  ASSERT_TRUE(window.ok()) << "cannot mmap fd " << info->fd << " at offset " << info->offset << ": "
                           << std::strerror(errno);
  for (size_t i = 0; i < bytes; ++i) {
    if (window.data()[i] != pattern_byte(i, seed)) {
      ADD_FAILURE() << "byte " << i << " written through the pointer is not at offset " << info->offset + i
                    << " of the fd";
      return;
    }
  }
  window.data()[bytes - 1] = static_cast<uint8_t>(~pattern_byte(bytes - 1, seed));
  EXPECT_EQ(pointer[bytes - 1], static_cast<uint8_t>(~pattern_byte(bytes - 1, seed)))
      << "a write through the fd is not visible through the pointer";
}

// Allocates a few sizes (1 .. 100000 bytes, page boundaries included) at every alignment from 64
// to 65536; for each block checks the alignment, that lookup() finds the block at its pointer and
// that its bytes are shared through the fd, calls check(pointer, bytes, alignment, info) for what
// the allocator adds, and frees it.
template <typename Check>
void for_each_block_shape(SharedMemoryAllocator& allocator, Check&& check) {
  for (size_t alignment = 64; alignment <= 65536; alignment *= 2) {
    for (size_t bytes : {size_t{1}, size_t{100}, size_t{4096}, size_t{4097}, size_t{100000}}) {
      SCOPED_TRACE(::testing::Message() << bytes << " bytes aligned to " << alignment);
      auto* pointer = static_cast<uint8_t*>(allocator.allocate(bytes, alignment));
      ASSERT_NE(pointer, nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(pointer) % alignment, 0u);
      auto info = allocator.lookup(pointer);
      ASSERT_TRUE(info.ok());
      EXPECT_EQ(info->block, pointer);
      EXPECT_LE(info->block_offset + bytes, info->mapping_size);
      check(pointer, bytes, alignment, *info);
      expect_shared_through_fd(allocator, pointer, bytes, static_cast<uint8_t>(alignment + bytes));
      allocator.free(pointer);
    }
  }
  EXPECT_EQ(allocator.stats().live_blocks, 0u);
}

// lookup() of each byte `into` a block of `bytes` at `pointer` reports the block's fd, the byte's
// own offset and what is left of the block, and the bytes from there are shared through the fd;
// the byte past the end is in no block.
inline void expect_lookup_inside(const SharedMemoryAllocator& allocator, uint8_t* pointer, size_t bytes,
                                 std::initializer_list<size_t> offsets) {
  auto start = allocator.lookup(pointer);
  ASSERT_TRUE(start.ok());
  for (size_t into : offsets) {
    auto inside = allocator.lookup(pointer + into);
    ASSERT_TRUE(inside.ok()) << into;
    EXPECT_EQ(inside->fd, start->fd);
    EXPECT_EQ(inside->block, pointer);
    EXPECT_EQ(inside->offset, start->offset + into);
    EXPECT_EQ(inside->size, bytes - into);
    expect_shared_through_fd(allocator, pointer + into, bytes - into, static_cast<uint8_t>(into));
  }
  EXPECT_EQ(allocator.lookup(pointer + bytes).status().code(), StatusCode::kNotFound);
}

// `threads` threads each allocate (sizes 1..70000, alignments 64..65536), fill, look up and free
// blocks in random order, keeping up to 8 live at a time. Checks every pointer's alignment, that
// lookup() of an interior byte finds its block, and that no block's bytes were overwritten by
// another thread's block. Every block is freed before it returns.
inline void exercise_concurrently(SharedMemoryAllocator& allocator, int threads, int iterations) {
  std::atomic<int> null_blocks{0};
  std::atomic<int> misaligned{0};
  std::atomic<int> lookup_failures{0};
  std::atomic<int> corrupted{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937 random(static_cast<uint32_t>(1234 + t));
      struct Live {
        uint8_t* pointer;
        size_t bytes;
        uint8_t seed;
      };
      std::vector<Live> live;
      auto release_one = [&](size_t index) {
        const Live block = live[index];
        auto info = allocator.lookup(block.pointer + block.bytes / 2);
        if (!info.ok() || info->block != block.pointer || info->size != block.bytes - block.bytes / 2) {
          ++lookup_failures;
        }
        if (block.pointer[0] != block.seed || block.pointer[block.bytes - 1] != block.seed) {
          ++corrupted;
        }
        allocator.free(block.pointer);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(index));
      };
      for (int i = 0; i < iterations; ++i) {
        if (live.size() < 8 && (live.empty() || random() % 3 != 0)) {
          const size_t bytes = 1 + random() % 70000;
          const size_t alignment = size_t{64} << (random() % 11);
          auto* pointer = static_cast<uint8_t*>(allocator.allocate(bytes, alignment));
          if (pointer == nullptr) {
            ++null_blocks;
            continue;
          }
          if (reinterpret_cast<uintptr_t>(pointer) % alignment != 0) {
            ++misaligned;
          }
          const auto seed = static_cast<uint8_t>(random() | 1);
          std::memset(pointer, seed, bytes);
          live.push_back({pointer, bytes, seed});
        } else {
          release_one(random() % live.size());
        }
      }
      while (!live.empty()) {
        release_one(live.size() - 1);
      }
    });
  }
  for (std::thread& worker : workers) {
    worker.join();
  }
  EXPECT_EQ(null_blocks.load(), 0);
  EXPECT_EQ(misaligned.load(), 0);
  EXPECT_EQ(lookup_failures.load(), 0);
  EXPECT_EQ(corrupted.load(), 0);
}

// Records every log message while alive; restores the previous sink and level afterwards.
class LogCapture {
 public:
  LogCapture() {
    saved_level_ = log_level();
    set_log_level(LogLevel::kWarning);
    saved_sink_ = set_log_sink([this](LogLevel level, std::string_view message) {
      std::lock_guard<std::mutex> lock(mutex_);
      messages_.emplace_back(level, std::string(message));
    });
  }
  ~LogCapture() {
    set_log_sink(std::move(saved_sink_));
    set_log_level(saved_level_);
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // How many warnings contain `text`.
  int warnings_containing(std::string_view text) const {
    std::lock_guard<std::mutex> lock(mutex_);
    int count = 0;
    for (const auto& [level, message] : messages_) {
      if (level == LogLevel::kWarning && message.find(text) != std::string::npos) {
        ++count;
      }
    }
    return count;
  }
  std::string all() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string out;
    for (const auto& [level, message] : messages_) {
      out += message + "\n";
    }
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<LogLevel, std::string>> messages_;
  LogSink saved_sink_;
  LogLevel saved_level_ = LogLevel::kWarning;
};

}  // namespace staticlm::testing
