#include "staticlm/runtime/kernel_registry.h"

#include <utility>

namespace staticlm {

Status KernelRegistry::add(OpKind op, KernelFactory factory) {
  const auto index = static_cast<size_t>(op);
  if (index >= factories_.size()) {
    return internal_error("op index ", index, " exceeds the kernel registry's capacity");
  }
  if (factories_[index]) {
    return invalid_argument("a kernel for '", op_name(op), "' is already registered");
  }
  factories_[index] = std::move(factory);
  return ok_status();
}

const KernelFactory* KernelRegistry::find(OpKind op) const {
  const auto index = static_cast<size_t>(op);
  if (index >= factories_.size() || !factories_[index]) {
    return nullptr;
  }
  return &factories_[index];
}

}  // namespace staticlm
