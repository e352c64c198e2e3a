// SPDX-License-Identifier: Apache-2.0
#include "staticlm/runtime/backend_runtime.h"

namespace staticlm {

Status BackendRuntimeRegistry::add(std::shared_ptr<const BackendRuntime> backend) {
  std::string id(backend->id());
  if (backends_.count(id) != 0) {
    return invalid_argument("backend '", id, "' is already registered");
  }
  const OptionSchema& schema = backend->runtime_options();
  if (schema.backend_id != id) {
    return internal_error("backend '", id, "': its runtime option schema names backend '", schema.backend_id, "'");
  }
  STATICLM_RETURN_IF_ERROR(check_schema(schema).with_context(str_cat("backend '", id, "' runtime options")));
  backends_.emplace(std::move(id), std::move(backend));
  return ok_status();
}

const BackendRuntime* BackendRuntimeRegistry::find(std::string_view id) const {
  auto it = backends_.find(id);
  return it == backends_.end() ? nullptr : it->second.get();
}

std::vector<std::string> BackendRuntimeRegistry::ids() const {
  std::vector<std::string> out;
  for (const auto& [id, backend] : backends_) {
    out.push_back(id);
  }
  return out;
}

}  // namespace staticlm
