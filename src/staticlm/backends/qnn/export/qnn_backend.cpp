// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/qnn/export/qnn_backend.h"

#include "staticlm/backends/qnn/export/qnn_compile_specs.h"
#include "staticlm/backends/qnn/export/qnn_schema.h"

namespace staticlm {
namespace {

bool is_64_bit_integer(DType dtype) {
  return dtype == DType::kI64;
}

}  // namespace

QnnBackend::QnnBackend(QnnSdkLocator locate) : locate_(std::move(locate)), schema_(qnn_option_schema()) {}

std::string_view QnnBackend::summary() const {
  return "Qualcomm AI Engine Direct (QNN): HTP, GPU and LPAI; needs the QNN SDK to build and run delegates";
}

NodeSupport QnnBackend::supports(const Graph& graph, size_t node, const ResolvedOptions& options) const {
  (void)options;
  const GraphNode& n = graph.nodes()[node];
  for (const auto* values : {&n.inputs, &n.outputs}) {
    for (ValueId value : *values) {
      if (value != kNoValue && is_64_bit_integer(graph.value(value).dtype)) {
        return NodeSupport::no("QNN has no 64-bit integer tensors");
      }
    }
  }
  return NodeSupport::yes();
}

Result<DelegatePayload> QnnBackend::preprocess(const PartitionSubgraph& partition,
                                               const ResolvedOptions& options) const {
  STATICLM_ASSIGN_OR_RETURN(QnnCompileOptions compile, qnn_compile_options(options));
  const std::vector<CompileSpecEntry> specs = build_qnn_compile_specs(compile);
  const QnnSdk sdk = locate_();
  if (sdk.root.empty()) {
    return unavailable("QNN SDK not found (", sdk.root_problem,
                       "): building a QNN delegate needs the QNN / QAIRT SDK; set QNN_SDK_ROOT to it");
  }
  return unimplemented("QNN SDK found at '", sdk.root, "', but this build cannot compose QNN graphs yet (",
                       partition.graph->nodes().size(), " nodes of method '", partition.method, "', ", specs.size(),
                       " compile specs ready for ", compile.soc_model, " / ", compile.backend, ")");
}

Status register_qnn_backend(BackendRegistry& registry) {
  return registry.add(std::make_shared<QnnBackend>([] { return detect_qnn_sdk(process_environment()); }));
}

}  // namespace staticlm
