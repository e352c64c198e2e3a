// The delegate backends this build of the CLI contains (export side). register_backend_runtimes
// (registration.h) registers their runtime sides from the same list, so the two never differ.
#pragma once

#include "staticlm/backends/api/backend.h"
#include "staticlm/core/status.h"

namespace staticlm::cli {

Status register_backends(BackendRegistry& registry);  // register_backends.cpp

}  // namespace staticlm::cli
