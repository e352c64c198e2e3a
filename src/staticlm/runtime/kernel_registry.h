// KernelRegistry: op → kernel factory, filled explicitly by each backend's register function
// (register_portable_kernels, ...). No static-initialiser registration.
#pragma once

#include <array>
#include <string>

#include "staticlm/runtime/kernel.h"

namespace staticlm {

class KernelRegistry {
 public:
  // Fails with AlreadyExists-like InvalidArgument when `op` already has a factory.
  Status add(OpKind op, KernelFactory factory);
  // nullptr when no kernel is registered for `op`.
  const KernelFactory* find(OpKind op) const;

 private:
  std::array<KernelFactory, 32> factories_{};
};

}  // namespace staticlm
