// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/shm/shm_allocator.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include <sys/mman.h>

#include "staticlm/core/checked_math.h"
#include "staticlm/core/logging.h"

namespace staticlm {
namespace {

constexpr const char* kMemfdName = "staticlm-io";
// Every mapping size below fits a file offset, which is then checked to fit a size_t too.
static_assert(sizeof(size_t) >= sizeof(off_t));

// A memfd of `bytes`, sealed against resizing: a process it is shared with cannot shrink it under
// our mapping (which would turn our accesses into SIGBUS).
Result<int> create_sealed_memfd(uint64_t bytes) {
  const int fd = memfd_create(kMemfdName, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    return unavailable("memfd_create failed: ", std::strerror(errno));
  }
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int err = errno;
    ::close(fd);
    return resource_exhausted("cannot size a memfd to ", bytes, " bytes: ", std::strerror(err));
  }
  // Sealing is hardening, not a requirement: a kernel that refuses it still gives a usable fd.
  (void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
  return fd;
}

}  // namespace

Result<std::shared_ptr<ShmAllocator>> ShmAllocator::create(const ShmAllocatorOptions& options) {
  std::shared_ptr<ShmAllocator> allocator(new ShmAllocator());
  const long page = sysconf(_SC_PAGESIZE);
  allocator->page_size_ = page > 0 ? static_cast<uint64_t>(page) : 4096;
  if (options.backing != ShmBacking::kMemfd) {
    auto heap = DmaHeap::open(options.dma_heap_path);
    if (heap.ok()) {
      allocator->dma_heap_ = std::move(heap).value();
      allocator->dma_heap_only_ = options.backing == ShmBacking::kDmaHeap;
      allocator->name_ = "shm:dma-buf";
      return allocator;
    }
    if (options.backing == ShmBacking::kDmaHeap) {
      return unavailable("shm allocator: ", heap.status().message(), " (the DMA heap was required)");
    }
    allocator->dma_heap_status_ = heap.status().message();
    log_info("shm allocator: ", heap.status().message(), "; using memfd");
  }
  auto probe = create_sealed_memfd(allocator->page_size_);
  if (!probe.ok()) {
    return unavailable("shm allocator: ", probe.status().message());
  }
  ::close(*probe);
  return allocator;
}

ShmAllocator::~ShmAllocator() {
  release_all();
}

std::optional<std::pair<int, SharedMemoryKind>> ShmAllocator::create_fd(uint64_t bytes) {
  std::string heap_refusal;
  if (dma_heap_) {
    auto fd = dma_heap_->allocate(bytes);
    if (fd.ok()) {
      return std::pair{*fd, SharedMemoryKind::kDmaBuf};
    }
    if (dma_heap_only_) {
      count_failed_allocation(fd.status().message());
      return std::nullopt;
    }
    heap_refusal = str_cat(fd.status().message(), "; ");
  }
  auto fd = create_sealed_memfd(bytes);
  if (!fd.ok()) {
    count_failed_allocation(str_cat(heap_refusal, fd.status().message()));
    return std::nullopt;
  }
  return std::pair{*fd, SharedMemoryKind::kMemfd};
}

void* ShmAllocator::allocate(size_t bytes, size_t alignment) {
  if (!is_power_of_two(alignment)) {
    count_failed_allocation(str_cat("alignment ", alignment, " is not a power of two"));
    return nullptr;
  }
  const uint64_t requested = bytes == 0 ? 1 : bytes;
  // mmap returns page-aligned memory: a larger alignment needs `alignment - page` bytes of slack.
  const uint64_t slack = alignment > page_size_ ? alignment - page_size_ : 0;
  auto rounded = checked_align_up(requested, page_size_);
  auto mapping_size = rounded ? checked_add(*rounded, slack) : std::nullopt;
  if (!mapping_size || *mapping_size > static_cast<uint64_t>(std::numeric_limits<off_t>::max())) {
    count_failed_allocation(str_cat("refused ", bytes, " bytes aligned to ", alignment,
                                    ": the mapping size does not fit in a file offset"));
    return nullptr;
  }
  auto fd = create_fd(*mapping_size);
  if (!fd) {
    return nullptr;
  }
  void* base = mmap(nullptr, static_cast<size_t>(*mapping_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd->first, 0);
  if (base == MAP_FAILED) {
    const int err = errno;
    ::close(fd->first);
    count_failed_allocation(str_cat("mmap of ", *mapping_size, " bytes failed: ", std::strerror(err)));
    return nullptr;
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(base);
  const uint64_t offset = (alignment - start % alignment) % alignment;  // <= slack: base is page-aligned
  Block block;
  block.base = base;
  block.block = static_cast<uint8_t*>(base) + offset;
  block.fd = fd->first;
  block.kind = fd->second;
  block.block_offset = offset;
  block.block_size = requested;
  block.mapping_size = *mapping_size;
  Status adopted = adopt(block);
  if (!adopted.ok()) {
    release(block);
    count_failed_allocation(adopted.message());
    return nullptr;
  }
  return block.block;
}

void ShmAllocator::release(const Block& block) {
  munmap(block.base, static_cast<size_t>(block.mapping_size));
  ::close(block.fd);
}

}  // namespace staticlm
