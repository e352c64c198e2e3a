// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/qnn/runtime/qnn_runtime.h"

namespace staticlm {
namespace {

constexpr std::string_view kRuntimeRoute = "runtime";

OptionSchema runtime_schema() {
  OptionSchema schema;
  schema.backend_id = "qnn";
  schema.options = {
      enum_option("log_level", "warn", allowed_values({"off", "error", "warn", "info", "verbose", "debug"}),
                  kRuntimeRoute, {}, "QNN runtime log level"),
      enum_option("htp_performance_mode", "burst",
                  allowed_values({"default", "sustained_high_performance", "burst", "high_performance", "power_saver",
                                  "low_power_saver", "high_power_saver", "low_balanced", "balanced"}),
                  kRuntimeRoute, {}, "HTP power / performance vote while delegates run"),
      enum_option("profile_level", "off", allowed_values({"off", "basic", "detailed", "optrace"}), kRuntimeRoute, {},
                  "QNN runtime profiling"),
  };
  return schema;
}

}  // namespace

QnnBackendRuntime::QnnBackendRuntime(std::function<QnnSdk()> locate)
    : locate_(std::move(locate)), options_(runtime_schema()) {}

Result<std::unique_ptr<DelegateHandle>> QnnBackendRuntime::init(const DelegateInit& init) const {
  (void)init;
  return unavailable(
      "QNN SDK not found: this staticlm build has no QNN runtime (libQnnHtp.so, libQnnGpu.so, libQnnLpai.so), "
      "so it cannot run qnn delegates; export for another backend or use a build with the QNN SDK");
}

Status register_qnn_backend_runtime(BackendRuntimeRegistry& registry) {
  return registry.add(std::make_shared<QnnBackendRuntime>([] { return detect_qnn_sdk(process_environment()); }));
}

}  // namespace staticlm
