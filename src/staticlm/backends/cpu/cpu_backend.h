// The cpu backend, first form: it takes every op of the LLM op set and runs its partitions with
// the portable kernels, so `staticlm export --backend cpu` gives the undelegated program's
// logits. The fast CPU backend replaces the kernels behind the same blob and id.
#pragma once

#include <memory>

#include "staticlm/backends/api/backend.h"
#include "staticlm/backends/cpu/cpu_runtime.h"

namespace staticlm {

class CpuBackend final : public Backend {
 public:
  static Result<std::shared_ptr<CpuBackend>> create();

  std::string_view id() const override { return kCpuBackendId; }
  std::string_view summary() const override;
  const OptionSchema& option_schema() const override { return schema_; }
  // Every op of the LLM op set.
  NodeSupport supports(const Graph& graph, size_t node, const ResolvedOptions& options) const override;
  // Serializes the partition (write_cpu_blob); every constant it reads becomes a runtime input.
  Result<DelegatePayload> preprocess(const PartitionSubgraph& partition, const ResolvedOptions& options) const override;
  std::shared_ptr<const BackendRuntime> runtime() const override { return runtime_; }

 private:
  CpuBackend() = default;
  OptionSchema schema_;
  std::shared_ptr<const CpuBackendRuntime> runtime_;
};

// The cpu backend's register function (export side and, through it, the runtime side).
Status register_cpu_backend(BackendRegistry& registry);

}  // namespace staticlm
