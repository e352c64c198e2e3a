// SPDX-License-Identifier: Apache-2.0
// The cpu backend's export side. It takes every op of the LLM op set, runs its graph passes
// (weight formats, fusions into the op set's fused ops, weight packing), and lowers each
// partition with the one lowering into a method blob (format/method_blob.h) whose weights are
// named data: each stored once per program under "cpu/<constant name>" and read by every
// method's delegate from the same mapped bytes. The runtime side (../runtime) runs the blob.
#pragma once

#include <memory>
#include <string>

#include "staticlm/backends/api/backend.h"

namespace staticlm {

// The named data key of a constant the cpu backend stores unchanged.
std::string cpu_named_data_key(std::string_view constant_name);

// Lowers `partition` as the cpu backend does: a method blob (one kernel call per node, the arena
// planned by the one planner) whose constants are named data under cpu_named_data_key. The
// delegate produces its outputs in `output_order` (DelegatePayload::output_order; empty: the
// subgraph's order). Fails with lower_method's errors.
Result<DelegatePayload> lower_cpu_partition(const PartitionSubgraph& partition,
                                            std::span<const uint32_t> output_order = {});

class CpuBackend final : public Backend {
 public:
  static Result<std::shared_ptr<CpuBackend>> create();

  std::string_view id() const override;
  std::string_view summary() const override;
  const OptionSchema& option_schema() const override { return schema_; }
  // weight_dtype (float formats), the fusions its kernels run as one op (swiglu / geglu,
  // swiglu_linear / geglu_linear, linear_add, multi_linear), then pack_weights (panels, int8 / int4
  // codes).
  std::vector<std::unique_ptr<GraphPass>> passes(const ResolvedOptions& options) const override;
  std::optional<std::string> stored_weight_format(const ResolvedOptions& options) const override;
  // Every op of the LLM op set.
  NodeSupport supports(const Graph& graph, size_t node, const ResolvedOptions& options) const override;
  // Lowers the partition into a method blob; its constants become named data.
  Result<DelegatePayload> preprocess(const PartitionSubgraph& partition, const ResolvedOptions& options) const override;

 private:
  CpuBackend() = default;
  OptionSchema schema_;
};

// The cpu backend's export-side register function.
Status register_cpu_backend(BackendRegistry& registry);

}  // namespace staticlm
