// SPDX-License-Identifier: Apache-2.0
#include "staticlm/runtime/kernel_registry.h"

#include <algorithm>
#include <utility>

namespace staticlm {

Status KernelRegistry::add(KernelEntry entry) {
  if (!entry.factory) {
    return invalid_argument("kernel '", entry.name, "' has no factory");
  }
  for (const KernelEntry& existing : entries_) {
    if (existing.name == entry.name) {
      return invalid_argument("a kernel named '", entry.name, "' is already registered");
    }
  }
  entries_.push_back(std::move(entry));
  return ok_status();
}

Status KernelRegistry::add(OpKind op, KernelFactory factory) {
  return add(
      KernelEntry{op, str_cat("portable.", op_name(op)), CpuFeatures(), kPortableKernelPriority, std::move(factory)});
}

std::vector<const KernelEntry*> KernelRegistry::kernels_of(OpKind op) const {
  std::vector<const KernelEntry*> out;
  for (const KernelEntry& entry : entries_) {
    if (entry.op == op) {
      out.push_back(&entry);
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const KernelEntry* a, const KernelEntry* b) { return a->priority > b->priority; });
  return out;
}

Result<SelectedKernel> KernelRegistry::select(const KernelSignature& signature, CpuFeatures allowed) const {
  const std::vector<const KernelEntry*> candidates = kernels_of(signature.op);
  if (candidates.empty()) {
    return unimplemented("no kernel is registered for op '", op_name(signature.op), "'");
  }
  std::vector<std::string> declined;
  for (const KernelEntry* entry : candidates) {
    if (!allowed.covers(entry->needs)) {
      declined.push_back(str_cat(entry->name, ": needs ", entry->needs.to_string(), ", allowed ", allowed.to_string()));
      continue;
    }
    auto kernel = entry->factory(signature);
    if (kernel.ok()) {
      return SelectedKernel{std::move(kernel).value(), entry->name};
    }
    if (kernel.status().code() != StatusCode::kUnimplemented) {
      return kernel.status();
    }
    declined.push_back(str_cat(entry->name, ": ", kernel.status().message()));
  }
  return unimplemented("no kernel of op '", op_name(signature.op), "' takes this instance (", join(declined, "; "),
                       ")");
}

}  // namespace staticlm
