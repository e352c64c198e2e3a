// SPDX-License-Identifier: Apache-2.0
// What each architecture folder of the kernels defines (x86/register_x86.cpp,
// arm/register_arm.cpp, generic/register_generic.cpp): its entries of the registry, beside
// register.h's cpu_kernel_paths() and cpu_kernel_arch().
#pragma once

#include "staticlm/core/status.h"
#include "staticlm/runtime/kernel_registry.h"

namespace staticlm {

// Adds this architecture's kernels, each tagged with the features it needs; the portable ones are
// already registered. Fails only for a bug (a duplicate name).
Status register_native_kernels(KernelRegistry& registry);

}  // namespace staticlm
