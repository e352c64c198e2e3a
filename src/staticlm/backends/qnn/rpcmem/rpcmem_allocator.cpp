// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/qnn/rpcmem/rpcmem_allocator.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>

#include "staticlm/core/checked_math.h"
#include "staticlm/core/logging.h"

namespace staticlm {
namespace {

std::string resolve_library_path(const RpcmemAllocatorOptions& options) {
  if (!options.library_path.empty()) {
    return options.library_path;
  }
  const char* from_env = std::getenv(kRpcmemLibraryEnv);
  if (from_env != nullptr && from_env[0] != '\0') {
    return from_env;
  }
  return kRpcmemDefaultLibrary;
}

}  // namespace

RpcmemAllocator::RpcmemAllocator(const RpcmemAllocatorOptions& options)
    : library_path_(resolve_library_path(options)), heap_id_(options.heap_id), flags_(options.flags) {
  auto library = RpcmemLibrary::load(library_path_);
  if (library.ok()) {
    library_ = std::move(library).value();
    return;
  }
  status_ = library.status();
  log_warning("I/O allocator 'rpcmem' is unavailable: ", status_.message(), " (set ", kRpcmemLibraryEnv,
              " to the library's path); its buffers fall back to the heap");
}

RpcmemAllocator::~RpcmemAllocator() {
  release_all();
}

void* RpcmemAllocator::allocate(size_t bytes, size_t alignment) {
  if (library_ == nullptr) {
    count_refused_allocation();
    return nullptr;
  }
  if (!is_power_of_two(alignment)) {
    count_failed_allocation(str_cat("alignment ", alignment, " is not a power of two"));
    return nullptr;
  }
  const uint64_t requested = bytes == 0 ? 1 : bytes;
  // rpcmem promises no alignment: ask for `alignment - 1` extra bytes and hand out the aligned
  // pointer inside.
  auto padded = checked_add(requested, alignment - 1);
  if (!padded || *padded > static_cast<uint64_t>(std::numeric_limits<int>::max())) {
    count_failed_allocation(str_cat("refused ", bytes, " bytes aligned to ", alignment,
                                    ": rpcmem_alloc takes an int size, at most ", std::numeric_limits<int>::max(),
                                    " bytes with the alignment padding"));
    return nullptr;
  }
  const RpcmemApi& api = library_->api();
  void* base = api.alloc(heap_id_, flags_, static_cast<int>(*padded));
  if (base == nullptr) {
    count_failed_allocation(
        str_cat("rpcmem_alloc(heap ", heap_id_, ", flags ", flags_, ", ", *padded, " bytes) returned null"));
    return nullptr;
  }
  const int fd = api.to_fd(base);
  if (fd < 0) {
    api.free(base);
    count_failed_allocation(str_cat("rpcmem_to_fd returned ", fd, " for a block rpcmem_alloc just returned"));
    return nullptr;
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(base);
  const uint64_t offset = (alignment - start % alignment) % alignment;
  Block block;
  block.base = base;
  block.block = static_cast<uint8_t*>(base) + offset;
  block.fd = fd;
  block.kind = SharedMemoryKind::kRpcmem;
  block.block_offset = offset;
  block.block_size = requested;
  block.mapping_size = *padded;
  std::memset(block.block, 0, static_cast<size_t>(requested));
  Status adopted = adopt(block);
  if (!adopted.ok()) {
    api.free(base);
    count_failed_allocation(adopted.message());
    return nullptr;
  }
  return block.block;
}

void RpcmemAllocator::release(const Block& block) {
  // The fd belongs to the block: rpcmem_free closes it.
  library_->api().free(block.base);
}

}  // namespace staticlm
