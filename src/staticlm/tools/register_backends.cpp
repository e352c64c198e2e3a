#include "staticlm/tools/register_backends.h"

#include "staticlm/backends/cpu/cpu_backend.h"
#include "staticlm/backends/qnn/qnn_backend.h"
#include "staticlm/tools/registration.h"

namespace staticlm::cli {

// The one place backends are registered: each has one register function.
Status register_backends(BackendRegistry& registry) {
  STATICLM_RETURN_IF_ERROR(register_cpu_backend(registry));
  STATICLM_RETURN_IF_ERROR(register_qnn_backend(registry));
  return ok_status();
}

Status register_backend_runtimes(BackendRuntimeRegistry& runtimes) {
  BackendRegistry backends;
  STATICLM_RETURN_IF_ERROR(register_backends(backends));
  return backends.register_runtimes(runtimes);
}

}  // namespace staticlm::cli
