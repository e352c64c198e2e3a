// SPDX-License-Identifier: Apache-2.0
// The qnn backend's runtime side. Its runtime options mirror what Qualcomm's runtime takes
// (log level, HTP performance mode, profiling) and are validated like every backend's; its
// preferred I/O allocator is rpcmem (memory the DSP maps). This build carries no QNN runtime
// library, so init fails with Unavailable "QNN SDK not found": nothing pretends to run a qnn
// delegate.
#pragma once

#include <functional>
#include <memory>

#include "staticlm/backends/qnn/runtime/qnn_sdk.h"
#include "staticlm/runtime/backend_runtime.h"

namespace staticlm {

class QnnBackendRuntime final : public BackendRuntime {
 public:
  // `locate` finds the SDK each time it is asked (tests inject a fixed one).
  explicit QnnBackendRuntime(std::function<QnnSdk()> locate);

  std::string_view id() const override { return "qnn"; }
  const OptionSchema& runtime_options() const override { return options_; }
  SdkInfo sdk() const override { return locate_().info; }
  std::string_view preferred_allocator() const override { return "rpcmem"; }
  // Always Unavailable: this build has no QNN runtime.
  Result<std::unique_ptr<DelegateHandle>> init(const DelegateInit& init) const override;

 private:
  std::function<QnnSdk()> locate_;
  OptionSchema options_;
};

// Registers the qnn runtime side with the SDK found in the process environment.
Status register_qnn_backend_runtime(BackendRuntimeRegistry& registry);

}  // namespace staticlm
