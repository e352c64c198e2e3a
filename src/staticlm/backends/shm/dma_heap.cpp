// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/shm/dma_heap.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <linux/dma-heap.h>
#include <sys/ioctl.h>

namespace staticlm {

DmaHeap::~DmaHeap() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

DmaHeap::DmaHeap(DmaHeap&& other) noexcept : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

DmaHeap& DmaHeap::operator=(DmaHeap&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

Result<DmaHeap> DmaHeap::open(const std::string& path) {
  DmaHeap heap;
  heap.path_ = path;
  heap.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (heap.fd_ < 0) {
    const int err = errno;
    if (err == ENOENT) {
      return not_found("DMA heap '", path, "' does not exist");
    }
    return unavailable("DMA heap '", path, "' cannot be opened: ", std::strerror(err));
  }
  const long page = sysconf(_SC_PAGESIZE);
  auto probe = heap.allocate(static_cast<uint64_t>(page > 0 ? page : 4096));
  if (!probe.ok()) {
    return unavailable(probe.status().message());
  }
  ::close(*probe);
  return heap;
}

Result<int> DmaHeap::allocate(uint64_t bytes) const {
  dma_heap_allocation_data request{};
  request.len = bytes;
  request.fd_flags = O_RDWR | O_CLOEXEC;
  request.heap_flags = 0;
  if (::ioctl(fd_, DMA_HEAP_IOCTL_ALLOC, &request) != 0) {
    const int err = errno;
    if (err == ENOMEM) {
      return resource_exhausted("DMA heap '", path_, "': cannot allocate ", bytes, " bytes: ", std::strerror(err));
    }
    return unavailable("DMA heap '", path_, "': DMA_HEAP_IOCTL_ALLOC of ", bytes,
                       " bytes failed: ", std::strerror(err));
  }
  return static_cast<int>(request.fd);
}

}  // namespace staticlm
