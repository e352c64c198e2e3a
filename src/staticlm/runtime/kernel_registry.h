// SPDX-License-Identifier: Apache-2.0
// KernelRegistry: the kernels of every op, each tagged with the CPU features it needs and a
// priority, filled explicitly by each backend's register function (register_portable_kernels,
// the cpu backend's, ...). No static-initialiser registration.
//
// Selection is by (op, dtypes, ISA): select() walks the op's kernels from the highest priority
// down, skips those needing a feature the caller does not allow (CpuFeatures: the host's, capped
// by a runtime option), and asks each factory in turn. A factory that returns Unimplemented ("not
// for this dtype / shape") passes to the next; the chain ends at the portable kernel, which
// takes every signature the op set accepts.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/cpu_features.h"
#include "staticlm/runtime/kernel.h"

namespace staticlm {

// Priority of the portable reference kernels: the end of every fallback chain.
inline constexpr int kPortableKernelPriority = 0;

struct KernelEntry {
  OpKind op = OpKind::kAdd;
  std::string name;   // unique: "portable.linear", "cpu.avx512.linear_f16"
  CpuFeatures needs;  // empty for a kernel in plain C++
  int priority = kPortableKernelPriority;
  KernelFactory factory;
};

struct SelectedKernel {
  std::unique_ptr<Kernel> kernel;
  std::string name;  // the entry that made it
};

class KernelRegistry {
 public:
  // Fails with InvalidArgument when the name is taken or the factory is empty.
  Status add(KernelEntry entry);
  // The portable kernel of `op`: name "portable.<op>", no features, kPortableKernelPriority.
  Status add(OpKind op, KernelFactory factory);

  // The kernel for `signature` (see above). Fails with Unimplemented when no kernel of the op is
  // registered, or when every allowed one declines (listing each one's reason), and with a
  // factory's other errors (InvalidArgument for a malformed signature) as they are.
  Result<SelectedKernel> select(const KernelSignature& signature, CpuFeatures allowed) const;

  // The op's kernels in selection order (priority, then registration).
  std::vector<const KernelEntry*> kernels_of(OpKind op) const;
  bool empty() const { return entries_.empty(); }

 private:
  std::vector<KernelEntry> entries_;
};

}  // namespace staticlm
