// SPDX-License-Identifier: Apache-2.0
// RpcmemAllocator ("rpcmem"): I/O buffers in Qualcomm rpcmem, memory the Hexagon DSP maps
// without copies. Each block is one rpcmem_alloc from the system heap with default (cached)
// flags, padded by `alignment - 1` bytes so the aligned pointer handed out lies inside it; its fd
// (rpcmem_to_fd) and the aligned pointer's offset are what a QNN backend registers
// (QnnMem_register) for each bound tensor. The pointer rpcmem_alloc returns is offset 0 of its
// fd. Memory comes back zero-filled.
//
// The vendor library is loaded when the allocator is created. Where it (or one of its entry
// points) is missing, creation still succeeds: available() is false, status() says why (logged
// once, as a warning), and allocate() returns nullptr, so the IOManager falls back to the heap
// (or, with --strict-io, fails).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "staticlm/backends/qnn/rpcmem/rpcmem_library.h"
#include "staticlm/backends/shm/shared_memory_allocator.h"

namespace staticlm {

// The environment variable that names the vendor library when the options do not.
inline constexpr const char* kRpcmemLibraryEnv = "STATICLM_RPCMEM_LIBRARY";

struct RpcmemAllocatorOptions {
  std::string library_path;  // empty: $STATICLM_RPCMEM_LIBRARY, or else libcdsprpc.so
  int heap_id = kRpcmemHeapIdSystem;
  uint32_t flags = kRpcmemDefaultFlags;
};

class RpcmemAllocator final : public SharedMemoryAllocator {
 public:
  explicit RpcmemAllocator(const RpcmemAllocatorOptions& options = {});
  // Frees any block still live, then unloads the library.
  ~RpcmemAllocator() override;

  std::string_view name() const override { return "rpcmem"; }
  // Returns nullptr (counted in stats()) when the library is unavailable, `alignment` is not a
  // power of two, the padded size does not fit rpcmem_alloc's int, or the vendor refuses the
  // memory or gives it no fd. Vendor failures are logged once.
  void* allocate(size_t bytes, size_t alignment) override;

  bool available() const { return library_ != nullptr; }
  // OK when available; otherwise Unavailable, e.g. "libcdsprpc.so not found: ...".
  const Status& status() const { return status_; }
  // The library it loaded or tried to load.
  const std::string& library_path() const { return library_path_; }

 private:
  void release(const Block& block) override;

  std::string library_path_;
  int heap_id_ = kRpcmemHeapIdSystem;
  uint32_t flags_ = kRpcmemDefaultFlags;
  std::unique_ptr<RpcmemLibrary> library_;
  Status status_;
};

}  // namespace staticlm
