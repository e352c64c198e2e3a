// The cpu backend's kernels: its SIMD kernels (AVX-512, AVX2) ahead of the portable ones, which
// stay as the fallback for every op and dtype the SIMD kernels decline.
#pragma once

#include "staticlm/core/status.h"
#include "staticlm/runtime/kernel_registry.h"

namespace staticlm {

// Adds the portable kernels and the cpu backend's own, each tagged with the features it needs.
Status register_cpu_kernels(KernelRegistry& registry);

}  // namespace staticlm
