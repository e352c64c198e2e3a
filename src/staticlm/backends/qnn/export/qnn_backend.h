// SPDX-License-Identifier: Apache-2.0
// The qnn backend's export side (Qualcomm AI Engine Direct): its option schema and compile-spec
// builders are real; building QNN context binaries needs the QNN SDK, which this build does not
// carry. So it is honest about it: preprocess fails with Unavailable "QNN SDK not found" when no
// SDK is found, and with Unimplemented when one is (graph building is not written yet). The run
// side (../runtime/qnn_runtime.h) refuses to init with Unavailable "QNN SDK not found".
#pragma once

#include <functional>
#include <memory>

#include "staticlm/backends/api/backend.h"
#include "staticlm/backends/qnn/runtime/qnn_sdk.h"

namespace staticlm {

using QnnSdkLocator = std::function<QnnSdk()>;

class QnnBackend final : public Backend {
 public:
  // `locate` finds the SDK each time it is asked (tests inject a fixed one).
  explicit QnnBackend(QnnSdkLocator locate);

  std::string_view id() const override { return "qnn"; }
  std::string_view summary() const override;
  const OptionSchema& option_schema() const override { return schema_; }
  SdkInfo sdk() const override { return locate_().info; }
  // The LLM op set, except tensors QNN has no type for (64-bit integers).
  NodeSupport supports(const Graph& graph, size_t node, const ResolvedOptions& options) const override;
  // Builds the compile specs, then fails: Unavailable "QNN SDK not found" without an SDK,
  // Unimplemented with one.
  Result<DelegatePayload> preprocess(const PartitionSubgraph& partition, const ResolvedOptions& options) const override;

 private:
  QnnSdkLocator locate_;
  OptionSchema schema_;
};

// Registers the qnn backend's export side with the SDK found in the process environment.
Status register_qnn_backend(BackendRegistry& registry);

}  // namespace staticlm
