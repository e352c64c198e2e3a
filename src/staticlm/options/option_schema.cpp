// SPDX-License-Identifier: Apache-2.0
#include "staticlm/options/option_schema.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

namespace staticlm {

OptionSpec make_option(std::string name, OptionType type, OptionValue default_value, std::string_view route,
                       std::vector<std::string> applies_to, std::string doc) {
  OptionSpec spec;
  spec.name = std::move(name);
  spec.type = type;
  spec.default_value = std::move(default_value);
  spec.route = std::string(route);
  spec.applies_to = std::move(applies_to);
  spec.doc = std::move(doc);
  return spec;
}

OptionSpec bool_option(std::string name, bool default_value, std::string_view route,
                       std::vector<std::string> applies_to, std::string doc) {
  return make_option(std::move(name), OptionType::kBool, default_value, route, std::move(applies_to), std::move(doc));
}

OptionSpec enum_option(std::string name, std::string default_value, std::vector<AllowedValue> allowed,
                       std::string_view route, std::vector<std::string> applies_to, std::string doc) {
  OptionSpec spec = make_option(std::move(name), OptionType::kEnum, std::move(default_value), route,
                                std::move(applies_to), std::move(doc));
  spec.allowed = std::move(allowed);
  return spec;
}

OptionSpec int_option(std::string name, int64_t default_value, double min, double max, std::string_view route,
                      std::vector<std::string> applies_to, std::string doc) {
  OptionSpec spec =
      make_option(std::move(name), OptionType::kInt, default_value, route, std::move(applies_to), std::move(doc));
  spec.min_value = min;
  spec.max_value = max;
  return spec;
}

std::vector<AllowedValue> allowed_values(std::initializer_list<const char*> names) {
  std::vector<AllowedValue> out;
  for (const char* name : names) {
    out.push_back({name, "", std::nullopt});
  }
  return out;
}

const OptionSpec* OptionSchema::find(std::string_view name) const {
  for (const OptionSpec& spec : options) {
    if (spec.name == name) {
      return &spec;
    }
  }
  return nullptr;
}

std::vector<std::string> OptionSchema::names() const {
  std::vector<std::string> out;
  for (const OptionSpec& spec : options) {
    out.push_back(spec.name);
  }
  return out;
}

namespace {

// The variant alternative each option type holds.
size_t value_index(OptionType type) {
  switch (type) {
    case OptionType::kBool: return 0;
    case OptionType::kInt: return 1;
    case OptionType::kFloat: return 2;
    case OptionType::kString:
    case OptionType::kEnum: return 3;
    case OptionType::kStringSet: return 4;
  }
  return 0;
}

bool has_allowed(const OptionSpec& spec, std::string_view value) {
  return std::any_of(spec.allowed.begin(), spec.allowed.end(), [&](const AllowedValue& a) { return a.name == value; });
}

}  // namespace

Status check_schema(const OptionSchema& schema) {
  std::set<std::string> names;
  const OptionSpec* selector = schema.selector.empty() ? nullptr : schema.find(schema.selector);
  if (!schema.selector.empty() && (selector == nullptr || selector->type != OptionType::kEnum)) {
    return internal_error("backend '", schema.backend_id, "': selector '", schema.selector, "' is not an enum option");
  }
  for (const OptionSpec& spec : schema.options) {
    const std::string what = str_cat("backend '", schema.backend_id, "' option '", spec.name, "'");
    if (!names.insert(spec.name).second) {
      return internal_error(what, ": declared twice");
    }
    if (spec.default_value.has_value() == spec.required) {
      return internal_error(what, ": needs exactly one of a default and required");
    }
    if (spec.default_value && spec.default_value->index() != value_index(spec.type)) {
      return internal_error(what, ": default is not of type ", option_type_name(spec.type));
    }
    if (!spec.int_values.empty()) {
      if (spec.type != OptionType::kInt) {
        return internal_error(what, ": int_values on an option that is not an int");
      }
      if (spec.default_value && std::find(spec.int_values.begin(), spec.int_values.end(),
                                          std::get<int64_t>(*spec.default_value)) == spec.int_values.end()) {
        return internal_error(what, ": default is not among its int_values");
      }
    }
    if (spec.type == OptionType::kEnum) {
      if (spec.allowed.empty()) {
        return internal_error(what, ": an enum needs allowed values");
      }
      if (spec.default_value && !has_allowed(spec, std::get<std::string>(*spec.default_value))) {
        return internal_error(what, ": default is not an allowed value");
      }
    }
    if (spec.route.empty()) {
      return internal_error(what, ": no route");
    }
    for (const std::string& type : spec.applies_to) {
      if (selector == nullptr || !has_allowed(*selector, type)) {
        return internal_error(what, ": applies to unknown backend type '", type, "'");
      }
    }
    for (const OptionConstraint& constraint : spec.constraints) {
      if (schema.find(constraint.other) == nullptr) {
        return internal_error(what, ": constraint names unknown option '", constraint.other, "'");
      }
    }
  }
  return ok_status();
}

ResolvedOptions::ResolvedOptions(std::string backend_id, std::string selected_type,
                                 std::vector<EffectiveOption> entries)
    : backend_id_(std::move(backend_id)), selected_type_(std::move(selected_type)), entries_(std::move(entries)) {}

const EffectiveOption* ResolvedOptions::find(std::string_view name) const {
  for (const EffectiveOption& entry : entries_) {
    if (entry.name == name) {
      return &entry;
    }
  }
  return nullptr;
}

namespace {

template <typename T>
Result<T> get_typed(const ResolvedOptions& options, std::string_view name, std::string_view type) {
  const EffectiveOption* entry = options.find(name);
  if (entry == nullptr) {
    return internal_error("backend '", options.backend_id(), "': option '", name, "' is not in effect");
  }
  if (!std::holds_alternative<T>(entry->value)) {
    return internal_error("backend '", options.backend_id(), "': option '", name, "' is not a ", type);
  }
  return std::get<T>(entry->value);
}

nlohmann::json value_json(const OptionValue& value) {
  switch (value.index()) {
    case 0: return std::get<bool>(value);
    case 1: return std::get<int64_t>(value);
    case 2: return std::get<double>(value);
    case 3: return std::get<std::string>(value);
    default: return std::get<std::vector<std::string>>(value);
  }
}

}  // namespace

Result<bool> ResolvedOptions::get_bool(std::string_view name) const {
  return get_typed<bool>(*this, name, "bool");
}
Result<int64_t> ResolvedOptions::get_int(std::string_view name) const {
  return get_typed<int64_t>(*this, name, "int");
}
Result<double> ResolvedOptions::get_float(std::string_view name) const {
  return get_typed<double>(*this, name, "float");
}
Result<std::string> ResolvedOptions::get_string(std::string_view name) const {
  return get_typed<std::string>(*this, name, "string");
}
Result<std::vector<std::string>> ResolvedOptions::get_string_set(std::string_view name) const {
  return get_typed<std::vector<std::string>>(*this, name, "string set");
}

std::vector<EffectiveOption> ResolvedOptions::routed_to(std::string_view route) const {
  std::vector<EffectiveOption> out;
  for (const EffectiveOption& entry : entries_) {
    if (entry.route == route) {
      out.push_back(entry);
    }
  }
  return out;
}

std::string ResolvedOptions::to_json() const {
  nlohmann::json options = nlohmann::json::array();
  for (const EffectiveOption& entry : entries_) {
    options.push_back({{"name", entry.name},
                       {"value", value_json(entry.value)},
                       {"source", entry.given ? "given" : "default"},
                       {"route", entry.route}});
  }
  nlohmann::json doc = {{"backend", backend_id_}, {"options", options}};
  if (!selected_type_.empty()) {
    doc["type"] = selected_type_;
  }
  return doc.dump();
}

}  // namespace staticlm
