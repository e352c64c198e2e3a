// SPDX-License-Identifier: Apache-2.0
// IOManager: allocates every input, output and cache buffer of an LLM session through one
// IOBufferAllocator (runtime/io_buffer_allocator.h) and owns them until it is destroyed.
// When the allocator returns nullptr the IOManager falls back to the heap (or the fallback
// allocator it was given), counts it, warns once through the logging hook, and reports it in
// stats(); with `strict` a fallback is an error. A failed allocate() leaves the manager whole:
// every buffer it holds (one whose bind failed included) is freed once, with the manager.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/runtime/io_buffer_allocator.h"

namespace staticlm {

struct AllocatorUsage {
  std::string allocator;
  uint64_t buffers = 0;
  uint64_t bytes = 0;
};

struct IoStats {
  std::vector<AllocatorUsage> per_allocator;  // in first-use order
  uint64_t fallbacks = 0;
  uint64_t fallback_bytes = 0;
  uint64_t bindings = 0;
  uint64_t cache_bytes = 0;  // of the buffers, those allocated for KV caches (IoRole::kCache)
};

struct IoManagerOptions {
  bool strict = false;  // refuse the heap fallback
  size_t alignment = 64;
  // Serves what the allocator cannot; the heap when empty. When it fails too, allocate() fails
  // with ResourceExhausted.
  std::shared_ptr<IOBufferAllocator> fallback = nullptr;
};

class IOManager {
 public:
  IOManager(std::shared_ptr<IOBufferAllocator> allocator, IoManagerOptions options);
  ~IOManager();
  IOManager(const IOManager&) = delete;
  IOManager& operator=(const IOManager&) = delete;

  // Allocates a buffer for `tensor`, binds it to that tensor and returns it with its identity
  // (ExternalBuffer: what the allocator that served it says the memory is), ready to bind to a
  // method session. Fails with ResourceExhausted when even the heap cannot serve it,
  // FailedPrecondition for a fallback in strict mode, or the allocator's bind error.
  Result<ExternalBuffer> allocate(const IoTensorRef& tensor);
  // Binds a buffer this manager allocated to one more tensor (a cache used by a second method),
  // through the allocator that allocated it.
  Status bind_shared(const ExternalBuffer& buffer, const IoTensorRef& tensor);

  IoStats stats() const { return stats_; }
  const IOBufferAllocator& allocator() const { return *allocator_; }

 private:
  struct Block {
    void* pointer = nullptr;
    uint64_t bytes = 0;
    IOBufferAllocator* owner = nullptr;
  };
  void count(const IOBufferAllocator& allocator, uint64_t bytes);

  std::shared_ptr<IOBufferAllocator> allocator_;
  std::shared_ptr<IOBufferAllocator> fallback_;
  IoManagerOptions options_;
  std::vector<Block> blocks_;
  IoStats stats_;
  bool warned_ = false;
};

}  // namespace staticlm
