// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/shm/shm_allocator.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "staticlm/backends/shm/shared_memory_test_util.h"

namespace staticlm {
namespace {

using testing::expect_shared_through_fd;
using testing::LogCapture;

std::shared_ptr<ShmAllocator> memfd_allocator() {
  ShmAllocatorOptions options;
  options.backing = ShmBacking::kMemfd;
  auto allocator = ShmAllocator::create(options);
  EXPECT_TRUE(allocator.ok()) << allocator.status().to_string();
  return allocator.ok() ? *allocator : nullptr;
}

uintptr_t address(const void* pointer) {
  return reinterpret_cast<uintptr_t>(pointer);
}

TEST(ShmAllocatorTest, EveryPointerIsAlignedAndSharedThroughItsFd) {
  auto allocator = memfd_allocator();
  ASSERT_NE(allocator, nullptr);
  testing::for_each_block_shape(*allocator, [](uint8_t*, size_t bytes, size_t, const SharedBlockInfo& info) {
    EXPECT_EQ(info.block_size, bytes);
    EXPECT_EQ(info.offset, info.block_offset);
    EXPECT_EQ(info.kind, SharedMemoryKind::kMemfd);
    struct stat file {};
    ASSERT_EQ(fstat(info.fd, &file), 0);
    EXPECT_EQ(static_cast<uint64_t>(file.st_size), info.mapping_size);
  });
  EXPECT_EQ(allocator->stats().refused_frees, 0u);
}

TEST(ShmAllocatorTest, ALargeAlignmentIsServedFromInsideAnOverAllocatedMapping) {
  auto allocator = memfd_allocator();
  ASSERT_NE(allocator, nullptr);
  // Some mapping eventually starts off a 64 KiB boundary; its block then sits at an offset > 0.
  bool saw_offset = false;
  std::vector<void*> held;
  for (int i = 0; i < 32 && !saw_offset; ++i) {
    void* pointer = allocator->allocate(5000, 65536);
    ASSERT_NE(pointer, nullptr);
    held.push_back(pointer);
    auto info = allocator->lookup(pointer);
    ASSERT_TRUE(info.ok());
    if (info->block_offset > 0) {
      saw_offset = true;
      EXPECT_EQ(info->block_offset % static_cast<uint64_t>(sysconf(_SC_PAGESIZE)), 0u);
      expect_shared_through_fd(*allocator, static_cast<uint8_t*>(pointer), 5000, 7);
    }
  }
  EXPECT_TRUE(saw_offset) << "every mapping happened to be 64 KiB aligned; the offset path went untested";
  for (void* pointer : held) {
    allocator->free(pointer);
  }
}

TEST(ShmAllocatorTest, LookupFindsEveryByteInsideABlockAndNothingOutside) {
  auto allocator = memfd_allocator();
  ASSERT_NE(allocator, nullptr);
  auto* pointer = static_cast<uint8_t*>(allocator->allocate(10000, 8192));
  ASSERT_NE(pointer, nullptr);
  testing::expect_lookup_inside(*allocator, pointer, 10000, {1, 63, 4095, 4096, 9999});
  auto past_end = allocator->lookup(pointer + 10000);
  ASSERT_FALSE(past_end.ok());
  EXPECT_EQ(past_end.status().code(), StatusCode::kNotFound);
  EXPECT_NE(past_end.status().message().find("lies in no live block"), std::string::npos)
      << past_end.status().message();
  int local = 0;
  EXPECT_FALSE(allocator->lookup(&local).ok());
  EXPECT_FALSE(allocator->lookup(nullptr).ok());
  allocator->free(pointer);
  EXPECT_FALSE(allocator->lookup(pointer).ok()) << "a freed block is no longer found";
}

TEST(ShmAllocatorTest, AnotherProcessSeesTheBlockThroughTheFd) {
  auto allocator = memfd_allocator();
  ASSERT_NE(allocator, nullptr);
  auto* pointer = static_cast<uint8_t*>(allocator->allocate(3000, 65536));
  ASSERT_NE(pointer, nullptr);
  auto info = allocator->lookup(pointer + 1000);
  ASSERT_TRUE(info.ok());
  std::memset(pointer, 0, 3000);
  std::memcpy(pointer + 1000, "parent", 6);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child maps only the fd and the offset, as an out-of-process backend would.
    testing::FdWindow window(info->fd, info->offset, 2000);
    if (!window.ok() || std::memcmp(window.data(), "parent", 6) != 0) {
      _exit(1);
    }
    std::memcpy(window.data() + 6, "+child", 6);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child did not see the parent's bytes at the reported offset";
  EXPECT_EQ(std::memcmp(pointer + 1000, "parent+child", 12), 0);
  allocator->free(pointer);
}

TEST(ShmAllocatorTest, MemoryComesBackZeroFilled) {
  auto allocator = memfd_allocator();
  ASSERT_NE(allocator, nullptr);
  auto* pointer = static_cast<uint8_t*>(allocator->allocate(20000, 64));
  ASSERT_NE(pointer, nullptr);
  EXPECT_EQ(std::count(pointer, pointer + 20000, uint8_t{0}), 20000);
  allocator->free(pointer);
}

TEST(ShmAllocatorTest, FreeClosesTheFdAndRefusesDoubleAndForeignFrees) {
  auto allocator = memfd_allocator();
  ASSERT_NE(allocator, nullptr);
  LogCapture logs;
  auto* first = static_cast<uint8_t*>(allocator->allocate(4096, 64));
  auto* second = static_cast<uint8_t*>(allocator->allocate(4096, 64));
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  const int fd = allocator->lookup(first)->fd;
  allocator->free(first);
  EXPECT_EQ(fcntl(fd, F_GETFD), -1) << "the block's fd is still open after free";
  EXPECT_EQ(logs.warnings_containing("free refused"), 0) << logs.all();

  allocator->free(first);  // double free
  EXPECT_EQ(logs.warnings_containing("is not a live block (a double free or a foreign pointer)"), 1) << logs.all();
  int local = 0;
  allocator->free(&local);  // foreign
  EXPECT_EQ(logs.warnings_containing("is not a live block"), 2) << logs.all();
  allocator->free(second + 16);  // interior
  EXPECT_EQ(logs.warnings_containing("lies 16 bytes inside the block"), 1) << logs.all();
  allocator->free(nullptr);
  EXPECT_EQ(allocator->stats().refused_frees, 3u);

  // The refused interior free left the block intact.
  ASSERT_TRUE(allocator->lookup(second).ok());
  expect_shared_through_fd(*allocator, second, 4096, 3);
  allocator->free(second);
  EXPECT_EQ(allocator->stats().live_blocks, 0u);
}

TEST(ShmAllocatorTest, AbsurdSizesAndAlignmentsAreRefused) {
  auto allocator = memfd_allocator();
  ASSERT_NE(allocator, nullptr);
  LogCapture logs;
  EXPECT_EQ(allocator->allocate(std::numeric_limits<size_t>::max(), 64), nullptr);
  EXPECT_EQ(logs.warnings_containing("does not fit in a file offset"), 1) << logs.all();
  EXPECT_EQ(allocator->allocate(std::numeric_limits<size_t>::max() - 4095, 4096), nullptr);
  EXPECT_EQ(allocator->allocate(size_t{1} << 63, 64), nullptr);
  EXPECT_EQ(allocator->allocate(size_t{1} << 62, 65536), nullptr) << "no address space holds 4 EiB";
  EXPECT_EQ(allocator->allocate(100, 3), nullptr);
  EXPECT_EQ(allocator->allocate(100, 0), nullptr);
  const SharedMemoryStats stats = allocator->stats();
  EXPECT_EQ(stats.failed_allocations, 6u);
  EXPECT_EQ(stats.live_blocks, 0u);
  EXPECT_EQ(stats.allocations, 0u);
}

TEST(ShmAllocatorTest, BindRecordsTheTensorsEachBlockBacks) {
  auto allocator = memfd_allocator();
  ASSERT_NE(allocator, nullptr);
  auto* cache = static_cast<uint8_t*>(allocator->allocate(4096, 64));
  auto* logits = static_cast<uint8_t*>(allocator->allocate(1000, 64));
  ASSERT_NE(cache, nullptr);
  ASSERT_NE(logits, nullptr);
  ASSERT_TRUE(allocator->bind(cache, {"prefill", "k_cache_0", IoRole::kCache, 4096}).ok());
  ASSERT_TRUE(allocator->bind(cache, {"decode", "k_cache_0", IoRole::kCache, 4096}).ok());
  ASSERT_TRUE(allocator->bind(logits, {"prefill", "logits", IoRole::kOutput, 1000}).ok());
  EXPECT_EQ(allocator->bindings().size(), 3u);
  EXPECT_EQ(allocator->stats().bindings, 3u);

  auto decode_cache = allocator->binding("decode", "k_cache_0");
  ASSERT_TRUE(decode_cache.ok()) << decode_cache.status().to_string();
  EXPECT_EQ(decode_cache->pointer, cache);
  EXPECT_EQ(decode_cache->fd, allocator->lookup(cache)->fd);
  EXPECT_EQ(decode_cache->offset, allocator->lookup(cache)->offset);
  EXPECT_EQ(decode_cache->bytes, 4096u);
  EXPECT_EQ(decode_cache->role, IoRole::kCache);
  auto output = allocator->binding("prefill", "logits");
  ASSERT_TRUE(output.ok());
  EXPECT_EQ(output->fd, allocator->lookup(logits)->fd);
  EXPECT_NE(output->fd, decode_cache->fd);

  auto missing = allocator->binding("decode", "logits");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no live block is bound to tensor 'logits' of method 'decode'"),
            std::string::npos);

  Status too_big = allocator->bind(logits, {"decode", "logits", IoRole::kOutput, 1001});
  EXPECT_EQ(too_big.code(), StatusCode::kOutOfRange);
  EXPECT_NE(too_big.message().find("output 'logits' of method 'decode' needs 1001 bytes, but only 1000 bytes"),
            std::string::npos)
      << too_big.message();
  int local = 0;
  Status foreign = allocator->bind(&local, {"decode", "input_ids", IoRole::kInput, 4});
  EXPECT_EQ(foreign.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(foreign.message().find("cannot bind input 'input_ids' of method 'decode'"), std::string::npos)
      << foreign.message();

  allocator->free(cache);
  EXPECT_FALSE(allocator->binding("prefill", "k_cache_0").ok()) << "a freed block's bindings go with it";
  EXPECT_EQ(allocator->bindings().size(), 1u);
  allocator->free(logits);
}

TEST(ShmAllocatorTest, ConcurrentAllocateAndFreeFromFourThreads) {
  auto allocator = memfd_allocator();
  ASSERT_NE(allocator, nullptr);
  testing::exercise_concurrently(*allocator, 4, 300);
  const SharedMemoryStats stats = allocator->stats();
  EXPECT_EQ(stats.live_blocks, 0u);
  EXPECT_EQ(stats.refused_frees, 0u);
  EXPECT_GT(stats.allocations, 0u);
}

TEST(ShmAllocatorTest, DestroyingWithLiveBlocksReleasesThemWithAWarning) {
  LogCapture logs;
  int fd = -1;
  {
    auto allocator = memfd_allocator();
    ASSERT_NE(allocator, nullptr);
    void* pointer = allocator->allocate(100, 64);
    ASSERT_NE(pointer, nullptr);
    fd = allocator->lookup(pointer)->fd;
  }
  EXPECT_EQ(logs.warnings_containing("destroyed with 1 block(s) never freed"), 1) << logs.all();
  EXPECT_EQ(fcntl(fd, F_GETFD), -1);
}

TEST(ShmAllocatorTest, TheNameSaysWhichBackingServesTheBlocks) {
  auto allocator = memfd_allocator();
  ASSERT_NE(allocator, nullptr);
  EXPECT_EQ(allocator->name(), "shm:memfd");
  EXPECT_EQ(allocator->preferred_kind(), SharedMemoryKind::kMemfd);
  EXPECT_TRUE(allocator->dma_heap_status().empty());
}

TEST(ShmAllocatorTest, AMissingDmaHeapMeansMemfdOrAnErrorWhenRequired) {
  ShmAllocatorOptions options;
  options.dma_heap_path = "/nonexistent/dma_heap/system";
  auto automatic = ShmAllocator::create(options);
  ASSERT_TRUE(automatic.ok()) << automatic.status().to_string();
  EXPECT_EQ((*automatic)->name(), "shm:memfd");
  EXPECT_NE((*automatic)->dma_heap_status().find("DMA heap '/nonexistent/dma_heap/system' does not exist"),
            std::string::npos)
      << (*automatic)->dma_heap_status();
  void* pointer = (*automatic)->allocate(100, 64);
  ASSERT_NE(pointer, nullptr);
  EXPECT_EQ((*automatic)->lookup(pointer)->kind, SharedMemoryKind::kMemfd);
  (*automatic)->free(pointer);

  options.backing = ShmBacking::kDmaHeap;
  auto required = ShmAllocator::create(options);
  ASSERT_FALSE(required.ok());
  EXPECT_EQ(required.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(required.status().message().find("does not exist (the DMA heap was required)"), std::string::npos)
      << required.status().message();
}

TEST(ShmAllocatorTest, ADeviceThatRefusesTheDmaHeapIoctlIsNotUsed) {
  // /dev/null opens but is no heap: the probe allocation fails, as on a heap this process may
  // not allocate from.
  ShmAllocatorOptions options;
  options.dma_heap_path = "/dev/null";
  auto automatic = ShmAllocator::create(options);
  ASSERT_TRUE(automatic.ok());
  EXPECT_EQ((*automatic)->name(), "shm:memfd");
  EXPECT_NE((*automatic)->dma_heap_status().find("DMA_HEAP_IOCTL_ALLOC of"), std::string::npos)
      << (*automatic)->dma_heap_status();
  options.backing = ShmBacking::kDmaHeap;
  auto required = ShmAllocator::create(options);
  ASSERT_FALSE(required.ok());
  EXPECT_NE(required.status().message().find("DMA heap '/dev/null': DMA_HEAP_IOCTL_ALLOC"), std::string::npos)
      << required.status().message();
}

TEST(ShmAllocatorTest, TheSystemDmaHeapServesDmaBufsWhereItIsUsable) {
  if (!DmaHeap::open("/dev/dma_heap/system").ok()) {
    GTEST_SKIP() << "/dev/dma_heap/system is missing or not permitted here";
  }
  ShmAllocatorOptions options;
  options.backing = ShmBacking::kDmaHeap;
  auto allocator = ShmAllocator::create(options);
  ASSERT_TRUE(allocator.ok()) << allocator.status().to_string();
  EXPECT_EQ((*allocator)->name(), "shm:dma-buf");
  auto* pointer = static_cast<uint8_t*>((*allocator)->allocate(10000, 65536));
  ASSERT_NE(pointer, nullptr);
  EXPECT_EQ(address(pointer) % 65536, 0u);
  EXPECT_EQ((*allocator)->lookup(pointer)->kind, SharedMemoryKind::kDmaBuf);
  expect_shared_through_fd(**allocator, pointer, 10000, 9);
  (*allocator)->free(pointer);
  EXPECT_EQ((*allocator)->stats().dma_buf_allocations, 1u);
}

}  // namespace
}  // namespace staticlm
