// SPDX-License-Identifier: Apache-2.0
#include "staticlm/ops/attributes.h"

#include <algorithm>

namespace staticlm {

std::string_view attr_type_name(const AttrValue& value) {
  switch (value.index()) {
    case 0: return "int";
    case 1: return "float";
    case 2: return "string";
    case 3: return "int list";
  }
  return "unknown";
}

Attributes::Attributes(std::initializer_list<std::pair<std::string, AttrValue>> entries) {
  for (const auto& [name, value] : entries) {
    set(name, value);
  }
}

void Attributes::set(std::string name, AttrValue value) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const auto& entry, const std::string& key) { return entry.first < key; });
  if (it != entries_.end() && it->first == name) {
    it->second = std::move(value);
    return;
  }
  entries_.insert(it, {std::move(name), std::move(value)});
}

const AttrValue* Attributes::find(std::string_view name) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const auto& entry, std::string_view key) { return entry.first < key; });
  if (it != entries_.end() && it->first == name) {
    return &it->second;
  }
  return nullptr;
}

namespace {

template <typename T>
Result<T> get_typed(const Attributes& attrs, std::string_view name, std::string_view expected) {
  const AttrValue* value = attrs.find(name);
  if (value == nullptr) {
    return invalid_argument("missing attribute '", name, "'");
  }
  if (const T* typed = std::get_if<T>(value)) {
    return *typed;
  }
  return invalid_argument("attribute '", name, "': expected ", expected, ", found ", attr_type_name(*value));
}

}  // namespace

Result<int64_t> Attributes::get_int(std::string_view name) const {
  return get_typed<int64_t>(*this, name, "int");
}

Result<double> Attributes::get_float(std::string_view name) const {
  const AttrValue* value = find(name);
  if (value != nullptr) {
    if (const int64_t* as_int = std::get_if<int64_t>(value)) {
      return static_cast<double>(*as_int);
    }
  }
  return get_typed<double>(*this, name, "float");
}

Result<std::string> Attributes::get_string(std::string_view name) const {
  return get_typed<std::string>(*this, name, "string");
}

Result<std::vector<int64_t>> Attributes::get_ints(std::string_view name) const {
  return get_typed<std::vector<int64_t>>(*this, name, "int list");
}

Result<int64_t> Attributes::get_int_or(std::string_view name, int64_t fallback) const {
  return has(name) ? get_int(name) : Result<int64_t>(fallback);
}

Result<double> Attributes::get_float_or(std::string_view name, double fallback) const {
  return has(name) ? get_float(name) : Result<double>(fallback);
}

Result<std::string> Attributes::get_string_or(std::string_view name, std::string fallback) const {
  return has(name) ? get_string(name) : Result<std::string>(std::move(fallback));
}

}  // namespace staticlm
