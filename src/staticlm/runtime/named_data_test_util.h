// SPDX-License-Identifier: Apache-2.0
// Named data held in memory, as a program's mapping would hold it, for tests that prepare methods
// or delegates without a program file.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "staticlm/runtime/named_data.h"

namespace staticlm::testing {

class MemoryNamedData final : public NamedDataMap {
 public:
  void put(std::string key, std::span<const uint8_t> bytes) {
    entries_[std::move(key)].assign(bytes.begin(), bytes.end());
  }
  void put_floats(std::string key, std::span<const float> values) {
    put(std::move(key), std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(values.data()), values.size_bytes()));
  }
  // Vector storage is at least 16-byte aligned, as the runtime requires of named data.
  Result<std::span<const uint8_t>> get(std::string_view key) const override {
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      return not_found("named data '", key, "' is not in the test map");
    }
    return std::span<const uint8_t>(it->second);
  }

 private:
  std::map<std::string, std::vector<uint8_t>, std::less<>> entries_;
};

}  // namespace staticlm::testing
