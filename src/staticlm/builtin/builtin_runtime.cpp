// SPDX-License-Identifier: Apache-2.0
#include "staticlm/builtin/builtin_runtime.h"

#include <memory>
#include <utility>

#include "staticlm/backends/cpu/runtime/cpu_runtime.h"
#include "staticlm/backends/portable/register.h"
#include "staticlm/backends/qnn/rpcmem/rpcmem_allocator.h"
#include "staticlm/backends/qnn/runtime/qnn_runtime.h"
#include "staticlm/backends/shm/shm_allocator.h"

namespace staticlm {

Status register_builtin_kernels(KernelRegistry& registry) {
  return register_portable_kernels(registry);
}

Status register_builtin_backend_runtimes(BackendRuntimeRegistry& registry) {
  STATICLM_RETURN_IF_ERROR(register_cpu_backend_runtime(registry));
  STATICLM_RETURN_IF_ERROR(register_qnn_backend_runtime(registry));
  return ok_status();
}

Status register_builtin_io_allocators(AllocatorRegistry& registry) {
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

Result<EngineRuntime> builtin_engine_runtime() {
  auto kernels = std::make_shared<KernelRegistry>();
  STATICLM_RETURN_IF_ERROR(register_builtin_kernels(*kernels));
  auto backends = std::make_shared<BackendRuntimeRegistry>();
  STATICLM_RETURN_IF_ERROR(register_builtin_backend_runtimes(*backends));
  auto contracts = std::make_shared<ContractRegistry>();
  STATICLM_RETURN_IF_ERROR(register_builtin_contracts(*contracts));
  auto allocators = std::make_shared<AllocatorRegistry>();
  STATICLM_RETURN_IF_ERROR(register_builtin_io_allocators(*allocators));
  return EngineRuntime{std::move(kernels), std::move(backends), std::move(contracts), std::move(allocators)};
}

}  // namespace staticlm
