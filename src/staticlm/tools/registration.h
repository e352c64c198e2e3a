// The one place the CLI registers what this build contains: kernels, backends, I/O allocators
// and contracts. Each register function is explicit; nothing registers itself.
#pragma once

#include "staticlm/core/status.h"
#include "staticlm/llm/allocator_registry.h"
#include "staticlm/llm/contract.h"
#include "staticlm/runtime/backend_runtime.h"
#include "staticlm/runtime/kernel_registry.h"

namespace staticlm::cli {

Status register_kernels(KernelRegistry& registry);                   // register_kernels.cpp
Status register_backend_runtimes(BackendRuntimeRegistry& registry);  // register_backends.cpp
Status register_io_allocators(AllocatorRegistry& registry);          // register_allocators.cpp
Status register_contracts(ContractRegistry& registry);               // register_kernels.cpp

}  // namespace staticlm::cli
