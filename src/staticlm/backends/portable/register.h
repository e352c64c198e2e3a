// SPDX-License-Identifier: Apache-2.0
// The portable backend: a plain C++ kernel, in f32 arithmetic, for every op of the closed op
// set (docs/ops.md). It is the oracle other backends are tested against, so it favours being
// obviously correct over being fast.
#pragma once

#include "staticlm/core/status.h"
#include "staticlm/runtime/kernel_registry.h"

namespace staticlm {

// Adds a portable kernel factory for every OpKind to `registry`. Fails with InvalidArgument
// (from KernelRegistry::add) when the registry already has a factory for one of them; the
// factories added before that op stay registered.
Status register_portable_kernels(KernelRegistry& registry);

}  // namespace staticlm
