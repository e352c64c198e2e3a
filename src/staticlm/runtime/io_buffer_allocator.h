// SPDX-License-Identifier: Apache-2.0
// IOBufferAllocator: the generic I/O-buffer hook. Every input, output and cache buffer the LLM
// runner hands a program is allocated through one of these, so a backend can put them in memory
// its accelerator shares (rpcmem, dma-buf, ...) without the runner knowing the vendor.
//
// Contract:
// - allocate(bytes, alignment) returns memory aligned to `alignment` (a power of two) or
//   nullptr. nullptr is not an error: it means "this allocator cannot serve that request", and
//   the caller (the IOManager) falls back to the heap and counts it.
// - bind(pointer, tensor) is called once for each tensor a buffer from allocate() will back,
//   after allocation and before first use, so the backend can register the memory (an fd and
//   offset, say). A buffer shared by several methods (a KV cache) is bound once per method. An
//   error from bind is an error of the run.
// - describe(pointer, bytes) says what the memory is (ExternalBuffer: host memory, or the fd and
//   offset of shared memory), so the runtime can hand that identity to the delegates that use
//   the tensor. It is called for pointers this allocator returned.
// - free(pointer) releases a pointer that allocate() returned; each exactly once.
// Allocators must be thread-safe: several runners may share one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "staticlm/core/status.h"
#include "staticlm/runtime/external_buffer.h"

namespace staticlm {

enum class IoRole : uint8_t { kInput, kOutput, kCache };

std::string_view io_role_name(IoRole role);

// Which program tensor a buffer backs.
struct IoTensorRef {
  std::string_view method;
  std::string_view name;
  IoRole role = IoRole::kInput;
  uint64_t bytes = 0;
};

class IOBufferAllocator {
 public:
  virtual ~IOBufferAllocator() = default;
  virtual std::string_view name() const = 0;
  virtual void* allocate(size_t bytes, size_t alignment) = 0;
  virtual Status bind(void* pointer, const IoTensorRef& tensor) = 0;
  // Host memory named after this allocator unless the allocator knows better.
  virtual ExternalBuffer describe(void* pointer, uint64_t bytes) const {
    return ExternalBuffer::host(pointer, bytes, std::string(name()));
  }
  virtual void free(void* pointer) = 0;
};

// Plain aligned heap memory; bind is a no-op. Also the fallback for every other allocator.
class HeapAllocator final : public IOBufferAllocator {
 public:
  std::string_view name() const override { return "heap"; }
  void* allocate(size_t bytes, size_t alignment) override;
  Status bind(void* pointer, const IoTensorRef& tensor) override;
  void free(void* pointer) override;
};

}  // namespace staticlm
