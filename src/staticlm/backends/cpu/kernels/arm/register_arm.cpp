// SPDX-License-Identifier: Apache-2.0
// The AArch64 kernels. None yet: every op runs on the portable kernels, which the registry falls
// back to, until the NEON / dotprod / i8mm entries are added here.
#include "staticlm/backends/cpu/kernels/native_kernels.h"
#include "staticlm/backends/cpu/kernels/register.h"

namespace staticlm {

std::span<const CpuKernelPath> cpu_kernel_paths() {
  return {};
}

std::string_view cpu_kernel_arch() {
  return "arm";
}

Status register_native_kernels(KernelRegistry& /*registry*/) {
  return ok_status();
}

}  // namespace staticlm
