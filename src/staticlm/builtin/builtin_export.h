// SPDX-License-Identifier: Apache-2.0
// The export side of every delegate backend this build has (cpu, qnn), registered in one place.
#pragma once

#include "staticlm/backends/api/backend.h"

namespace staticlm {

Status register_builtin_backends(BackendRegistry& registry);

}  // namespace staticlm
