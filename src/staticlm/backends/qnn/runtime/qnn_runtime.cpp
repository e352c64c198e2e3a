#include "staticlm/backends/qnn/runtime/qnn_runtime.h"

namespace staticlm {
namespace {

OptionSpec enum_option(std::string name, std::vector<std::string> values, std::string default_value, std::string doc) {
  OptionSpec spec;
  spec.name = std::move(name);
  spec.type = OptionType::kEnum;
  for (std::string& value : values) {
    spec.allowed.push_back({std::move(value), "", std::nullopt});
  }
  spec.default_value = std::move(default_value);
  spec.route = "runtime";
  spec.doc = std::move(doc);
  return spec;
}

OptionSchema runtime_schema() {
  OptionSchema schema;
  schema.backend_id = "qnn";
  schema.options = {
      enum_option("log_level", {"off", "error", "warn", "info", "verbose", "debug"}, "warn", "QNN runtime log level"),
      enum_option("htp_performance_mode",
                  {"default", "sustained_high_performance", "burst", "high_performance", "power_saver",
                   "low_power_saver", "high_power_saver", "low_balanced", "balanced"},
                  "burst", "HTP power / performance vote while delegates run"),
      enum_option("profile_level", {"off", "basic", "detailed", "optrace"}, "off", "QNN runtime profiling"),
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
