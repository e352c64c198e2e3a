// SPDX-License-Identifier: Apache-2.0
// libFuzzer: backend options as a user gives them in --options FILE.json, routed through
// Partitioner::from_options for the cpu and qnn backends (the first byte picks one). Every
// outcome must be a partitioner or a Status naming the option.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "staticlm/backends/cpu/export/cpu_backend.h"
#include "staticlm/backends/qnn/export/qnn_backend.h"
#include "staticlm/options/option_value.h"
#include "staticlm/partition/partitioner.h"

namespace {

const staticlm::BackendRegistry& registry() {
  static const auto* backends = [] {
    auto* out = new staticlm::BackendRegistry();
    (void)staticlm::register_cpu_backend(*out);
    (void)staticlm::register_qnn_backend(*out);
    return out;
  }();
  return *backends;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto options = staticlm::parse_options_json(text, "fuzz.json");
  if (!options.ok()) {
    return 0;
  }
  auto backend = registry().get(data[0] % 2 == 0 ? "cpu" : "qnn");
  if (backend.ok()) {
    (void)staticlm::Partitioner::from_options(**backend, *options);
  }
  return 0;
}
