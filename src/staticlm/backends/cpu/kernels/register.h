// SPDX-License-Identifier: Apache-2.0
// The cpu backend's kernels: the native kernels of the target architecture (x86/ or arm/, chosen
// when the build is configured) ahead of the portable ones, which stay as the fallback for every
// op and dtype the native kernels decline, and everything on a target without native kernels.
#pragma once

#include <span>
#include <string_view>

#include "staticlm/backends/cpu/kernels/elementwise_rows.h"
#include "staticlm/backends/cpu/kernels/quantized_rows.h"
#include "staticlm/core/cpu_features.h"
#include "staticlm/core/status.h"
#include "staticlm/runtime/kernel_registry.h"

namespace staticlm {

// Adds the portable kernels and the cpu backend's own, each tagged with the features it needs.
Status register_cpu_kernels(KernelRegistry& registry);

// One instruction-set path of this build's native kernels: the cpu backend's `isa` runtime
// option value that caps the registry at it, the prefix of its kernels' names ("cpu.avx2."), the
// features it needs, and the loops of it that tests check directly.
struct CpuKernelPath {
  const char* isa;
  const char* prefix;
  CpuFeatures needs;
  cpu::ExpShiftedFn exp_shifted;
  cpu::QuantizeGroupFn quantize_group;
};

// This build's paths, widest first; empty where only the portable kernels were built (a target
// without native kernels, or STATICLM_CPU_KERNELS=portable).
std::span<const CpuKernelPath> cpu_kernel_paths();
// The folder whose kernels this build compiled: "x86", "arm", or "generic" (none: the portable
// kernels alone).
std::string_view cpu_kernel_arch();

}  // namespace staticlm
