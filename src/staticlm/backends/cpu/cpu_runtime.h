// The cpu backend's runtime side: init verifies the blob (read_cpu_blob) against the call's
// inputs, prepares a portable kernel for every node and allocates the delegate's arena once;
// execute binds the call's inputs and outputs and runs the kernels in order.
#pragma once

#include <memory>

#include "staticlm/core/result.h"
#include "staticlm/runtime/backend_runtime.h"
#include "staticlm/runtime/kernel_registry.h"

namespace staticlm {

inline constexpr std::string_view kCpuBackendId = "cpu";

class CpuBackendRuntime final : public BackendRuntime {
 public:
  // Fails only if the portable kernels cannot be registered (a bug).
  static Result<std::shared_ptr<CpuBackendRuntime>> create(std::string id = std::string(kCpuBackendId));

  std::string_view id() const override { return id_; }
  // Fails with DataLoss / InvalidArgument for a blob read_cpu_blob refuses (the message names
  // what is wrong), with a kernel factory's error for a node it cannot prepare, and with
  // ResourceExhausted when the arena cannot be allocated.
  Result<std::unique_ptr<DelegateHandle>> init(const DelegateInit& init) const override;

 private:
  explicit CpuBackendRuntime(std::string id) : id_(std::move(id)) {}
  std::string id_;
  KernelRegistry kernels_;
};

}  // namespace staticlm
