#include <memory>
#include <utility>

#include "staticlm/backends/qnn/rpcmem/rpcmem_allocator.h"
#include "staticlm/backends/shm/shm_allocator.h"
#include "staticlm/tools/registration.h"

namespace staticlm::cli {

// I/O allocators beyond the built-in heap.
Status register_io_allocators(AllocatorRegistry& registry) {
  STATICLM_RETURN_IF_ERROR(
      registry.add("shm", "Linux shared memory with an fd per buffer (DMA-BUF system heap where permitted, else memfd)",
                   []() -> Result<std::shared_ptr<IOBufferAllocator>> {
                     STATICLM_ASSIGN_OR_RETURN(std::shared_ptr<ShmAllocator> allocator, ShmAllocator::create());
                     return std::shared_ptr<IOBufferAllocator>(std::move(allocator));
                   }));
  STATICLM_RETURN_IF_ERROR(registry.add(
      "rpcmem", "Qualcomm rpcmem via libcdsprpc.so (path: $STATICLM_RPCMEM_LIBRARY); heap when unavailable",
      []() -> Result<std::shared_ptr<IOBufferAllocator>> {
        return std::shared_ptr<IOBufferAllocator>(std::make_shared<RpcmemAllocator>());
      }));
  return ok_status();
}

}  // namespace staticlm::cli
