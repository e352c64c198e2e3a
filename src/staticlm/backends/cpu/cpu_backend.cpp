#include "staticlm/backends/cpu/cpu_backend.h"

#include "staticlm/backends/cpu/cpu_blob.h"

namespace staticlm {

Result<std::shared_ptr<CpuBackend>> CpuBackend::create() {
  std::shared_ptr<CpuBackend> backend(new CpuBackend());
  backend->schema_.backend_id = std::string(kCpuBackendId);
  backend->schema_.options = partitioner_option_specs();
  STATICLM_ASSIGN_OR_RETURN(backend->runtime_, CpuBackendRuntime::create());
  return backend;
}

std::string_view CpuBackend::summary() const {
  return "the host CPU: every op of the LLM op set, run with the portable kernels for now";
}

NodeSupport CpuBackend::supports(const Graph& graph, size_t node, const ResolvedOptions& options) const {
  (void)graph;
  (void)node;
  (void)options;
  return NodeSupport::yes();
}

Result<DelegatePayload> CpuBackend::preprocess(const PartitionSubgraph& partition,
                                               const ResolvedOptions& options) const {
  (void)options;
  DelegatePayload payload;
  const Graph& graph = *partition.graph;
  for (size_t v = 0; v < graph.num_values(); ++v) {
    const GraphValue& value = graph.value(static_cast<ValueId>(v));
    if (value.kind == ValueKind::kConstant) {
      payload.runtime_constants.push_back(value.constant);
    }
  }
  STATICLM_ASSIGN_OR_RETURN(std::vector<uint8_t> blob, write_cpu_blob(graph, payload.runtime_constants));
  payload.blob = make_owned_source(std::move(blob));
  return payload;
}

Status register_cpu_backend(BackendRegistry& registry) {
  STATICLM_ASSIGN_OR_RETURN(std::shared_ptr<CpuBackend> backend, CpuBackend::create());
  return registry.add(std::move(backend));
}

}  // namespace staticlm
