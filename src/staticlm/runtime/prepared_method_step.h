// SPDX-License-Identifier: Apache-2.0
// One prepared instruction of a PreparedMethod; shared by its builder and MethodSession.
// Internal to the runtime library.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/runtime/prepared_method.h"

namespace staticlm {

struct PreparedMethod::Step {
  std::string label;  // "instruction 3 (linear)"
  OpKind kind{};      // a kernel call's op
  std::unique_ptr<Kernel> kernel;
  std::unique_ptr<DelegateHandle> delegate;
  std::vector<int32_t> inputs;    // value indices, -1 = absent
  std::vector<uint32_t> outputs;  // value indices, in the order the kernel / delegate writes them
};

}  // namespace staticlm
