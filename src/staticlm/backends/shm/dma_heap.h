// SPDX-License-Identifier: Apache-2.0
// DmaHeap: an open DMA-BUF heap device (/dev/dma_heap/<name>) that hands out dma-buf fds, the
// memory a device driver can import directly. Whether a heap exists, and whether this process may
// allocate from it, is only known at run time, so open() tries one allocation.
#pragma once

#include <cstdint>
#include <string>

#include "staticlm/core/result.h"

namespace staticlm {

class DmaHeap {
 public:
  DmaHeap() = default;
  ~DmaHeap();
  DmaHeap(DmaHeap&& other) noexcept;
  DmaHeap& operator=(DmaHeap&& other) noexcept;
  DmaHeap(const DmaHeap&) = delete;
  DmaHeap& operator=(const DmaHeap&) = delete;

  // Opens the heap at `path` and allocates (then closes) one page from it. Fails with NotFound
  // when the device does not exist, Unavailable when it cannot be opened or refuses the
  // allocation (a permission, a kernel without that heap, a path that is no heap), naming the
  // path and the system error.
  static Result<DmaHeap> open(const std::string& path);

  // A new dma-buf of `bytes` (a multiple of the page size), as an fd the caller owns. Fails with
  // ResourceExhausted or Unavailable, naming the path, the size and the system error.
  Result<int> allocate(uint64_t bytes) const;

  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace staticlm
