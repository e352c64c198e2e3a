// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/contract.h"

#include "staticlm/format/metadata.h"
#include "staticlm/format/metadata_keys.h"
#include "staticlm/llm/hf_static_v1.h"

namespace staticlm {

Status LlmSession::embed(std::span<const int32_t>, const HiddenStateSink&) {
  return failed_precondition("this program has no embeddings method: export it with --embeddings mean|last");
}

Result<std::vector<uint8_t>> LlmSession::cache_contents() const {
  return unimplemented("this contract's sessions cannot be saved");
}

Status LlmSession::restore_cache(std::span<const int32_t>, std::span<const uint8_t>) {
  return unimplemented("this contract's sessions cannot be restored");
}

Status ContractRegistry::add(std::unique_ptr<LlmContract> contract) {
  for (const auto& existing : contracts_) {
    if (existing->name() == contract->name() && existing->version() == contract->version()) {
      return invalid_argument("contract ", contract->name(), " v", contract->version(), " is already registered");
    }
  }
  contracts_.push_back(std::move(contract));
  return ok_status();
}

std::vector<std::pair<std::string, int64_t>> ContractRegistry::supported() const {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& contract : contracts_) {
    out.emplace_back(std::string(contract->name()), contract->version());
  }
  return out;
}

Result<const LlmContract*> ContractRegistry::select(const ProgramFile& file) const {
  std::vector<std::string> names;
  for (const auto& [name, version] : supported()) {
    names.push_back(str_cat(name, " v", version));
  }
  const std::string supported_list = names.empty() ? "none" : join(names, ", ");
  auto name = metadata_string(file, kContractKey);
  if (!name.ok()) {
    return invalid_argument("'", file.path(), "' declares no I/O contract (metadata '", kContractKey,
                            "'); this build supports ", supported_list);
  }
  auto version = metadata_int(file, kContractVersionKey);
  if (!version.ok()) {
    return invalid_argument("'", file.path(), "': ", version.status().message());
  }
  for (const auto& contract : contracts_) {
    if (contract->name() == *name && contract->version() == *version) {
      return contract.get();
    }
  }
  return unimplemented("'", file.path(), "' uses contract ", *name, " v", *version,
                       ", which this build does not implement (supported: ", supported_list, ")");
}

Status register_builtin_contracts(ContractRegistry& registry) {
  return registry.add(make_hf_static_v1_contract());
}

}  // namespace staticlm
