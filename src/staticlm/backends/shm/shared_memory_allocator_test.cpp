// SPDX-License-Identifier: Apache-2.0
// The block records every fd-backed allocator shares, exercised through a fake subclass that
// hands out caller-chosen ranges of one array, so block boundaries can be placed exactly.
#include "staticlm/backends/shm/shared_memory_allocator.h"

#include <array>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/backends/shm/shared_memory_test_util.h"

namespace staticlm {
namespace {

class CarvedAllocator final : public SharedMemoryAllocator {
 public:
  // Released fds go to `released_to` (which may outlive the allocator) or to `released`.
  explicit CarvedAllocator(std::vector<int>* released_to = nullptr)
      : released_to_(released_to != nullptr ? released_to : &released) {}
  ~CarvedAllocator() override { release_all(); }
  std::string_view name() const override { return "carved"; }
  void* allocate(size_t, size_t) override { return nullptr; }

  // Records [offset, offset + bytes) of the arena as a block of fd 100 + offset.
  void* carve(size_t offset, size_t bytes) {
    Block block;
    block.base = arena_.data() + offset;
    block.block = block.base;
    block.fd = 100 + static_cast<int>(offset);
    block.block_offset = 0;
    block.block_size = bytes;
    block.mapping_size = bytes;
    return adopt(block).ok() ? block.block : nullptr;
  }
  Status carve_status(size_t offset, size_t bytes) {
    Block block;
    block.base = arena_.data() + offset;
    block.block = block.base;
    block.block_size = bytes;
    return adopt(block);
  }

  std::vector<int> released;
  uint8_t* arena() { return arena_.data(); }

 private:
  void release(const Block& block) override { released_to_->push_back(block.fd); }
  std::vector<int>* released_to_;
  std::array<uint8_t, 1024> arena_{};
};

TEST(SharedMemoryAllocatorTest, AdjacentBlocksSplitExactlyAtTheirBoundary) {
  testing::LogCapture logs;  // the carved blocks are never freed
  CarvedAllocator allocator;
  ASSERT_NE(allocator.carve(0, 100), nullptr);
  ASSERT_NE(allocator.carve(100, 50), nullptr);
  auto last_of_first = allocator.lookup(allocator.arena() + 99);
  ASSERT_TRUE(last_of_first.ok());
  EXPECT_EQ(last_of_first->fd, 100);
  EXPECT_EQ(last_of_first->offset, 99u);
  EXPECT_EQ(last_of_first->size, 1u);
  auto first_of_second = allocator.lookup(allocator.arena() + 100);
  ASSERT_TRUE(first_of_second.ok());
  EXPECT_EQ(first_of_second->fd, 200);
  EXPECT_EQ(first_of_second->offset, 0u);
  EXPECT_EQ(first_of_second->size, 50u);
  EXPECT_FALSE(allocator.lookup(allocator.arena() + 150).ok());
}

TEST(SharedMemoryAllocatorTest, AnOverlappingBlockIsRefused) {
  testing::LogCapture logs;  // the carved blocks are never freed
  CarvedAllocator allocator;
  ASSERT_NE(allocator.carve(100, 100), nullptr);
  for (auto [offset, bytes] : {std::pair<size_t, size_t>{50, 51}, {199, 10}, {120, 10}, {0, 500}}) {
    Status refused = allocator.carve_status(offset, bytes);
    EXPECT_EQ(refused.code(), StatusCode::kInternal) << offset << "+" << bytes;
    EXPECT_NE(refused.message().find("overlaps a live block"), std::string::npos) << refused.message();
  }
  EXPECT_NE(allocator.carve(50, 50), nullptr) << "touching is not overlapping";
  EXPECT_NE(allocator.carve(200, 10), nullptr);
  EXPECT_EQ(allocator.stats().live_blocks, 3u);
}

TEST(SharedMemoryAllocatorTest, FreeReleasesEachBlockOnceAndOnlyAtItsStart) {
  testing::LogCapture logs;
  CarvedAllocator allocator;
  void* block = allocator.carve(0, 64);
  ASSERT_NE(block, nullptr);
  allocator.free(allocator.arena() + 8);
  EXPECT_TRUE(allocator.released.empty());
  allocator.free(block);
  allocator.free(block);
  EXPECT_EQ(allocator.released, std::vector<int>{100});
  EXPECT_EQ(allocator.stats().refused_frees, 2u);
  EXPECT_EQ(logs.warnings_containing("allocator 'carved': free refused"), 2) << logs.all();
}

TEST(SharedMemoryAllocatorTest, BindingsOfTheSameTensorReportTheMostRecent) {
  testing::LogCapture logs;  // the carved blocks are never freed
  CarvedAllocator allocator;
  void* high = allocator.carve(512, 64);
  void* low = allocator.carve(0, 64);
  ASSERT_TRUE(allocator.bind(high, {"decode", "logits", IoRole::kOutput, 64}).ok());
  ASSERT_TRUE(allocator.bind(low, {"decode", "logits", IoRole::kOutput, 64}).ok());
  auto latest = allocator.binding("decode", "logits");
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->pointer, low);
  ASSERT_TRUE(allocator.bind(static_cast<uint8_t*>(high) + 32, {"decode", "logits", IoRole::kOutput, 32}).ok());
  latest = allocator.binding("decode", "logits");
  EXPECT_EQ(latest->pointer, static_cast<uint8_t*>(high) + 32);
  EXPECT_EQ(latest->offset, 32u) << "an interior binding reports its own offset in the fd";
}

TEST(SharedMemoryAllocatorTest, DestructionReleasesWhatWasNeverFreed) {
  testing::LogCapture logs;
  std::vector<int> released;
  {
    CarvedAllocator allocator(&released);
    ASSERT_NE(allocator.carve(0, 10), nullptr);
    ASSERT_NE(allocator.carve(10, 10), nullptr);
    allocator.free(allocator.arena());
  }
  EXPECT_EQ(released, (std::vector<int>{100, 110}));
  EXPECT_EQ(logs.warnings_containing("allocator 'carved' destroyed with 1 block(s) never freed"), 1) << logs.all();
}

}  // namespace
}  // namespace staticlm
