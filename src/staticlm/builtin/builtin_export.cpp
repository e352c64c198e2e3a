// SPDX-License-Identifier: Apache-2.0
#include "staticlm/builtin/builtin_export.h"

#include "staticlm/backends/cpu/export/cpu_backend.h"
#include "staticlm/backends/qnn/export/qnn_backend.h"

namespace staticlm {

Status register_builtin_backends(BackendRegistry& registry) {
  STATICLM_RETURN_IF_ERROR(register_cpu_backend(registry));
  STATICLM_RETURN_IF_ERROR(register_qnn_backend(registry));
  return ok_status();
}

}  // namespace staticlm
