// SPDX-License-Identifier: Apache-2.0
// What this build can run, registered in one place for every front end (the CLI, the Python
// module, the server): the portable kernels, the run side of each delegate backend (cpu, qnn),
// the I/O allocators (heap, shm, rpcmem) and the contracts (hf_static v1). Every registration is
// an explicit call; nothing registers itself. Links no graph IR.
#pragma once

#include "staticlm/core/result.h"
#include "staticlm/llm/engine.h"

namespace staticlm {

Status register_builtin_kernels(KernelRegistry& registry);
Status register_builtin_backend_runtimes(BackendRuntimeRegistry& registry);
Status register_builtin_io_allocators(AllocatorRegistry& registry);
// Contracts: register_builtin_contracts (llm/contract.h).

// Every registry filled. Fails only if a registration fails (a bug).
Result<EngineRuntime> builtin_engine_runtime();

}  // namespace staticlm
