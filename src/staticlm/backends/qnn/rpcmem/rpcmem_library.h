// SPDX-License-Identifier: Apache-2.0
// RpcmemLibrary: Qualcomm's rpcmem C API (libcdsprpc.so), loaded at run time with dlopen so a
// build without the Hexagon SDK still links, and a device without the library still runs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "staticlm/core/result.h"

namespace staticlm {

// From the Hexagon SDK's rpcmem.h: the system heap, and cached memory.
inline constexpr int kRpcmemHeapIdSystem = 25;      // RPCMEM_HEAP_ID_SYSTEM
inline constexpr uint32_t kRpcmemDefaultFlags = 1;  // RPCMEM_DEFAULT_FLAGS
inline constexpr const char* kRpcmemDefaultLibrary = "libcdsprpc.so";

// The entry points, as the vendor declares them. `init` and `deinit` are absent from newer
// libraries (they initialise themselves) and are then nullptr.
struct RpcmemApi {
  void* (*alloc)(int heap_id, uint32_t flags, int size) = nullptr;
  void (*free)(void* pointer) = nullptr;
  int (*to_fd)(void* pointer) = nullptr;
  void (*init)() = nullptr;
  void (*deinit)() = nullptr;
};

class RpcmemLibrary {
 public:
  // Loads `path` (a file name is searched for the way dlopen searches) and resolves the API,
  // then calls rpcmem_init when the library has it. Fails with Unavailable: "<path> not found:
  // <loader message>" when there is no such library, "<path> cannot be loaded: ..." when it
  // exists but does not load, "<path> has no symbol 'rpcmem_to_fd'" for a missing entry point.
  static Result<std::unique_ptr<RpcmemLibrary>> load(const std::string& path);
  // Calls rpcmem_deinit when rpcmem_init ran and the library has it, then unloads. Every block must have been freed.
  ~RpcmemLibrary();
  RpcmemLibrary(const RpcmemLibrary&) = delete;
  RpcmemLibrary& operator=(const RpcmemLibrary&) = delete;

  const RpcmemApi& api() const { return api_; }
  const std::string& path() const { return path_; }

 private:
  RpcmemLibrary() = default;
  void* handle_ = nullptr;
  bool initialised_ = false;  // rpcmem_init ran: rpcmem_deinit (when present) runs on unload
  std::string path_;
  RpcmemApi api_;
};

}  // namespace staticlm
