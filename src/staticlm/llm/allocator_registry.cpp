// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/allocator_registry.h"

#include <utility>

namespace staticlm {

AllocatorRegistry::AllocatorRegistry() {
  entries_["heap"] = {"aligned process heap (the fallback for every other allocator)",
                      []() -> Result<std::shared_ptr<IOBufferAllocator>> {
                        return std::shared_ptr<IOBufferAllocator>(std::make_shared<HeapAllocator>());
                      }};
}

Status AllocatorRegistry::add(std::string name, std::string description, AllocatorFactory factory) {
  if (entries_.count(name) != 0) {
    return invalid_argument("I/O allocator '", name, "' is already registered");
  }
  entries_.emplace(std::move(name), Entry{std::move(description), std::move(factory)});
  return ok_status();
}

Result<std::shared_ptr<IOBufferAllocator>> AllocatorRegistry::create(std::string_view name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    std::vector<std::string> names;
    for (const auto& [known, entry] : entries_) {
      names.push_back(known);
    }
    return not_found("unknown I/O allocator '", name, "' (available: ", join(names, ", "), ")");
  }
  return it->second.factory();
}

std::vector<std::pair<std::string, std::string>> AllocatorRegistry::list() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, entry] : entries_) {
    out.emplace_back(name, entry.description);
  }
  return out;
}

}  // namespace staticlm
