// SPDX-License-Identifier: Apache-2.0
// ShmAllocator ("shm"): I/O buffers in Linux shared memory, each with an fd another process or a
// device driver can map. Each block is one mapping of its own fd: a dma-buf from the DMA-BUF
// system heap (/dev/dma_heap/system) where it exists and this process may allocate from it,
// otherwise a sealed memfd. Alignment beyond the page size is met by mapping `alignment - page`
// extra bytes and handing out the aligned pointer inside; lookup() reports its offset in the fd.
// Memory comes back zero-filled.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "staticlm/backends/shm/dma_heap.h"
#include "staticlm/backends/shm/shared_memory_allocator.h"

namespace staticlm {

enum class ShmBacking : uint8_t {
  kAuto,     // the DMA heap when it is usable, memfd otherwise (and for blocks the heap refuses)
  kMemfd,    // memfd only
  kDmaHeap,  // the DMA heap only: creation fails without it, a refused block is nullptr
};

struct ShmAllocatorOptions {
  ShmBacking backing = ShmBacking::kAuto;
  std::string dma_heap_path = "/dev/dma_heap/system";
};

class ShmAllocator final : public SharedMemoryAllocator {
 public:
  // Fails with Unavailable when memfd_create does not work here (kAuto, kMemfd), or when the DMA
  // heap is missing or refuses to allocate (kDmaHeap), naming the path and the system error.
  static Result<std::shared_ptr<ShmAllocator>> create(const ShmAllocatorOptions& options = {});
  ~ShmAllocator() override;

  // "shm:dma-buf" when blocks come from the DMA heap, "shm:memfd" otherwise; fixed at creation,
  // so the run stats say which.
  std::string_view name() const override { return name_; }
  // Returns nullptr, counted in stats() and logged once, when `alignment` is not a power of two,
  // the mapping size overflows, or the kernel refuses the memory.
  void* allocate(size_t bytes, size_t alignment) override;

  // The kind of fd allocate() produces first (a kAuto block the heap refuses is a memfd).
  SharedMemoryKind preferred_kind() const { return dma_heap_ ? SharedMemoryKind::kDmaBuf : SharedMemoryKind::kMemfd; }
  // Why the DMA heap is not used; empty when it is, or when memfd was asked for.
  const std::string& dma_heap_status() const { return dma_heap_status_; }

 private:
  ShmAllocator() = default;
  // A zero-filled fd of `bytes`, and its kind; std::nullopt after counting the failure.
  std::optional<std::pair<int, SharedMemoryKind>> create_fd(uint64_t bytes);
  void release(const Block& block) override;

  std::string name_ = "shm:memfd";
  std::optional<DmaHeap> dma_heap_;
  bool dma_heap_only_ = false;
  std::string dma_heap_status_;
  uint64_t page_size_ = 4096;
};

}  // namespace staticlm
