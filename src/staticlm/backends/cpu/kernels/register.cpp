// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/cpu/kernels/register.h"

#include "staticlm/backends/cpu/kernels/native_kernels.h"
#include "staticlm/backends/portable/register.h"

namespace staticlm {

Status register_cpu_kernels(KernelRegistry& registry) {
  STATICLM_RETURN_IF_ERROR(register_portable_kernels(registry));
  return register_native_kernels(registry);
}

}  // namespace staticlm
