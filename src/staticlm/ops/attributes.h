// SPDX-License-Identifier: Apache-2.0
// Attributes: the typed, named settings of one op instance (eps, axis, rope scaling, ...).
// Getters fail with InvalidArgument naming the attribute when it is missing or has another
// type, so a kernel or the graph verifier can refuse a malformed op instead of guessing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "staticlm/core/result.h"

namespace staticlm {

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>>;

std::string_view attr_type_name(const AttrValue& value);

class Attributes {
 public:
  Attributes() = default;
  Attributes(std::initializer_list<std::pair<std::string, AttrValue>> entries);

  // Sets (or replaces) an attribute. Entries stay sorted by name.
  void set(std::string name, AttrValue value);
  const AttrValue* find(std::string_view name) const;
  bool has(std::string_view name) const { return find(name) != nullptr; }

  Result<int64_t> get_int(std::string_view name) const;
  Result<double> get_float(std::string_view name) const;  // accepts an int value too
  Result<std::string> get_string(std::string_view name) const;
  Result<std::vector<int64_t>> get_ints(std::string_view name) const;

  // The same getters with a default for an absent attribute; a present attribute of the wrong
  // type is still an error.
  Result<int64_t> get_int_or(std::string_view name, int64_t fallback) const;
  Result<double> get_float_or(std::string_view name, double fallback) const;
  Result<std::string> get_string_or(std::string_view name, std::string fallback) const;

  const std::vector<std::pair<std::string, AttrValue>>& entries() const { return entries_; }
  bool operator==(const Attributes&) const = default;

 private:
  std::vector<std::pair<std::string, AttrValue>> entries_;
};

}  // namespace staticlm
