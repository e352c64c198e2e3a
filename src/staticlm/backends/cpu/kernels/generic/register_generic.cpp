// SPDX-License-Identifier: Apache-2.0
// A build without native kernels (a target with no architecture folder, or
// STATICLM_CPU_KERNELS=portable): the portable kernels run every op.
#include "staticlm/backends/cpu/kernels/native_kernels.h"
#include "staticlm/backends/cpu/kernels/register.h"

namespace staticlm {

std::span<const CpuKernelPath> cpu_kernel_paths() {
  return {};
}

std::string_view cpu_kernel_arch() {
  return "generic";
}

Status register_native_kernels(KernelRegistry& /*registry*/) {
  return ok_status();
}

}  // namespace staticlm
