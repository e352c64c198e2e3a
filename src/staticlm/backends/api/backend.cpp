// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/api/backend.h"

#include "staticlm/options/did_you_mean.h"

namespace staticlm {

Status BackendRegistry::add(std::shared_ptr<const Backend> backend) {
  std::string id(backend->id());
  if (backends_.count(id) != 0) {
    return invalid_argument("backend '", id, "' is already registered");
  }
  STATICLM_RETURN_IF_ERROR(check_schema(backend->option_schema()));
  backends_.emplace(std::move(id), std::move(backend));
  return ok_status();
}

const Backend* BackendRegistry::find(std::string_view id) const {
  auto it = backends_.find(id);
  return it == backends_.end() ? nullptr : it->second.get();
}

Result<const Backend*> BackendRegistry::get(std::string_view id) const {
  if (const Backend* backend = find(id)) {
    return backend;
  }
  std::vector<std::string> ids;
  for (const auto& [name, backend] : backends_) {
    ids.push_back(name);
  }
  return not_found("unknown backend '", id, "'", did_you_mean(id, ids),
                   " (backends: ", ids.empty() ? "none" : join(ids, ", "), ")");
}

std::vector<const Backend*> BackendRegistry::all() const {
  std::vector<const Backend*> out;
  for (const auto& [id, backend] : backends_) {
    out.push_back(backend.get());
  }
  return out;
}

std::vector<OptionSpec> partitioner_option_specs() {
  return {
      make_option("skip_node_id_set", OptionType::kStringSet, std::vector<std::string>{}, kRoutePartitioner, {},
                  "nodes kept off the backend: INDEX (every method), METHOD:INDEX, or a node name"),
      make_option("skip_node_op_set", OptionType::kStringSet, std::vector<std::string>{}, kRoutePartitioner, {},
                  "ops kept off the backend, by op name (rope, attention, ...)"),
      bool_option("skip_mutable_buffer", false, kRoutePartitioner, {},
                  "keep nodes that update a buffer in place (in-place kv_cache_update) off the backend"),
  };
}

}  // namespace staticlm
