// SPDX-License-Identifier: Apache-2.0
// ExternalBuffer: an I/O buffer with the identity a backend needs to import it into its device
// (as IREE's external buffers carry it): the memory, and for fd-backed memory the fd and the
// offset of the memory within it. The IOBufferAllocator that made a buffer describes it; the
// runtime hands the description to every delegate that reads or writes the tensor, once, when
// the tensor is bound, so a backend registers shared memory once rather than per call.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace staticlm {

enum class ExternalBufferType : uint8_t {
  kHostAllocation,  // ordinary process memory: no fd; a backend copies or maps it its own way
  kMemfd,           // memfd_create: any process or driver can mmap the fd
  kDmaBuf,          // a dma-buf (DMA-BUF heap): devices import the fd
  kRpcmem,          // Qualcomm rpcmem: the DSP maps the fd (QnnMem_register)
};

std::string_view external_buffer_type_name(ExternalBufferType type);

struct ExternalBuffer {
  void* data = nullptr;
  uint64_t size = 0;  // bytes at `data` that belong to this tensor
  ExternalBufferType type = ExternalBufferType::kHostAllocation;
  std::string allocator;  // the allocator that made it ("heap", "shm:memfd", "rpcmem", "caller")
  int fd = -1;            // fd-backed types: owned by the allocator, valid until the buffer is freed
  uint64_t offset = 0;    // fd-backed types: where `data` lies within the fd

  bool has_fd() const { return fd >= 0; }
  // Plain host memory of `size` bytes at `data`.
  static ExternalBuffer host(void* data, uint64_t size, std::string allocator = "caller");
};

}  // namespace staticlm
