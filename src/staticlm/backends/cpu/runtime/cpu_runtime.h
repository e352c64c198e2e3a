// SPDX-License-Identifier: Apache-2.0
// The cpu backend's runtime side. A cpu delegate's blob is one method serialized as a method
// blob (format/method_blob.h): init verifies it with the runtime's one instruction-list verifier
// (PreparedMethod), resolving its weights from the program's named data (stored once, shared by
// every method's delegate, zero-copy), checks it against the call's inputs, and picks a kernel
// for every node from the cpu backend's kernel registry: its own kernels first, by the ISA the
// `isa` runtime option allows, then the portable ones, and reports those choices
// (DelegateHandle::kernel_report, what `staticlm inspect --kernels` prints). Each session gets its
// own arena.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "staticlm/core/result.h"
#include "staticlm/runtime/backend_runtime.h"
#include "staticlm/runtime/kernel_registry.h"

namespace staticlm {

inline constexpr std::string_view kCpuBackendId = "cpu";

class CpuBackendRuntime final : public BackendRuntime {
 public:
  // Fails only if the kernels cannot be registered (a bug).
  static Result<std::shared_ptr<CpuBackendRuntime>> create(std::string id = std::string(kCpuBackendId));

  std::string_view id() const override { return id_; }
  // isa = one of this architecture's caps (core/cpu_features.h isa_caps()): the most the kernels
  // may use (auto: what the CPU has).
  const OptionSchema& runtime_options() const override { return options_; }
  // Fails with DataLoss / InvalidArgument for a blob the method verifier refuses (the message
  // names what is wrong) or that does not match the call's inputs, NotFound for named data the
  // program lacks, Unimplemented when no kernel takes a node.
  Result<std::unique_ptr<DelegateHandle>> init(const DelegateInit& init) const override;

 private:
  explicit CpuBackendRuntime(std::string id) : id_(std::move(id)) {}
  std::string id_;
  OptionSchema options_;
  KernelRegistry kernels_;
};

// The cpu backend's run-side register function.
Status register_cpu_backend_runtime(BackendRuntimeRegistry& registry);

}  // namespace staticlm
