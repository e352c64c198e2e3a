// SPDX-License-Identifier: Apache-2.0
// resolve_options: untyped options -> typed effective settings (option_schema.h).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "staticlm/options/did_you_mean.h"
#include "staticlm/options/option_schema.h"

namespace staticlm {
namespace {

// "option 'x' (--option)", or "option 'x'" when the value says nowhere where it came from.
std::string option_label(const std::string& name, const RawOptionValue& raw) {
  return raw.origin.empty() ? str_cat("option '", name, "'") : str_cat("option '", name, "' (", raw.origin, ")");
}

std::string allowed_names(const OptionSpec& spec) {
  std::vector<std::string> names;
  for (const AllowedValue& value : spec.allowed) {
    names.push_back(value.name);
  }
  return join(names, ", ");
}

std::string range_string(const OptionSpec& spec) {
  auto bound = [&](const std::optional<double>& value, std::string_view open) -> std::string {
    if (!value) {
      return std::string(open);
    }
    return spec.type == OptionType::kInt ? std::to_string(static_cast<int64_t>(*value)) : str_cat(*value);
  };
  return str_cat("[", bound(spec.min_value, "-inf"), ", ", bound(spec.max_value, "inf"), "]");
}

Status wrong_type(const OptionSpec& spec, const RawOptionValue& raw, std::string_view expected) {
  return invalid_argument(option_label(spec.name, raw), ": expected ", expected, ", found ", describe_raw_value(raw));
}

Result<OptionValue> type_bool(const OptionSpec& spec, const RawOptionValue& raw) {
  if (raw.form == RawOptionValue::Form::kBool) {
    return OptionValue(std::get<bool>(raw.value));
  }
  if (raw.form == RawOptionValue::Form::kText) {
    const std::string& text = std::get<std::string>(raw.value);
    if (text == "true" || text == "1") return OptionValue(true);
    if (text == "false" || text == "0") return OptionValue(false);
  }
  return wrong_type(spec, raw, "a bool (true or false)");
}

Status check_range(const OptionSpec& spec, const RawOptionValue& raw, double value) {
  if ((spec.min_value && value < *spec.min_value) || (spec.max_value && value > *spec.max_value)) {
    return invalid_argument(option_label(spec.name, raw), ": expected ", option_type_name(spec.type), " in ",
                            range_string(spec), ", found ", describe_raw_value(raw));
  }
  return ok_status();
}

Result<OptionValue> type_int(const OptionSpec& spec, const RawOptionValue& raw) {
  int64_t value = 0;
  if (raw.form == RawOptionValue::Form::kInt) {
    value = std::get<int64_t>(raw.value);
  } else if (raw.form == RawOptionValue::Form::kText) {
    const std::string& text = std::get<std::string>(raw.value);
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
      return wrong_type(spec, raw, "an int");
    }
  } else {
    return wrong_type(spec, raw, "an int");
  }
  STATICLM_RETURN_IF_ERROR(check_range(spec, raw, static_cast<double>(value)));
  if (!spec.int_values.empty() &&
      std::find(spec.int_values.begin(), spec.int_values.end(), value) == spec.int_values.end()) {
    std::vector<std::string> values;
    for (int64_t allowed : spec.int_values) {
      values.push_back(std::to_string(allowed));
    }
    return invalid_argument(option_label(spec.name, raw), ": expected one of ", join(values, ", "), ", found ",
                            describe_raw_value(raw));
  }
  return OptionValue(value);
}

Result<OptionValue> type_float(const OptionSpec& spec, const RawOptionValue& raw) {
  double value = 0.0;
  if (raw.form == RawOptionValue::Form::kFloat) {
    value = std::get<double>(raw.value);
  } else if (raw.form == RawOptionValue::Form::kInt) {
    value = static_cast<double>(std::get<int64_t>(raw.value));
  } else if (raw.form == RawOptionValue::Form::kText) {
    const std::string& text = std::get<std::string>(raw.value);
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
      return wrong_type(spec, raw, "a float");
    }
  } else {
    return wrong_type(spec, raw, "a float");
  }
  if (!std::isfinite(value)) {
    return wrong_type(spec, raw, "a finite float");
  }
  STATICLM_RETURN_IF_ERROR(check_range(spec, raw, value));
  return OptionValue(value);
}

Result<OptionValue> type_string(const OptionSpec& spec, const RawOptionValue& raw) {
  if (raw.form != RawOptionValue::Form::kText && raw.form != RawOptionValue::Form::kString) {
    return wrong_type(spec, raw, spec.type == OptionType::kEnum ? "one of " + allowed_names(spec) : "a string");
  }
  std::string value = std::get<std::string>(raw.value);
  if (spec.type == OptionType::kEnum) {
    std::vector<std::string> names;
    for (const AllowedValue& allowed : spec.allowed) {
      names.push_back(allowed.name);
    }
    if (std::find(names.begin(), names.end(), value) == names.end()) {
      return invalid_argument(option_label(spec.name, raw), ": '", value, "' is not one of ", allowed_names(spec),
                              did_you_mean(value, names));
    }
  }
  return OptionValue(std::move(value));
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

Result<OptionValue> type_string_set(const OptionSpec& spec, const RawOptionValue& raw) {
  std::vector<std::string> items;
  if (raw.form == RawOptionValue::Form::kStringList) {
    items = std::get<std::vector<std::string>>(raw.value);
  } else if (raw.form == RawOptionValue::Form::kText) {
    std::string_view rest = std::get<std::string>(raw.value);
    while (!trim(rest).empty()) {
      const size_t comma = rest.find(',');
      const std::string_view item = trim(rest.substr(0, comma));
      if (item.empty()) {
        return wrong_type(spec, raw, "a comma-separated list without empty items");
      }
      items.emplace_back(item);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      if (comma != std::string_view::npos && trim(rest).empty()) {
        return wrong_type(spec, raw, "a comma-separated list without empty items");
      }
    }
  } else {
    return wrong_type(spec, raw, "a string set (a JSON array of strings, or a,b,c)");
  }
  std::sort(items.begin(), items.end());
  items.erase(std::unique(items.begin(), items.end()), items.end());
  return OptionValue(std::move(items));
}

Result<OptionValue> type_value(const OptionSpec& spec, const RawOptionValue& raw) {
  switch (spec.type) {
    case OptionType::kBool: return type_bool(spec, raw);
    case OptionType::kInt: return type_int(spec, raw);
    case OptionType::kFloat: return type_float(spec, raw);
    case OptionType::kString:
    case OptionType::kEnum: return type_string(spec, raw);
    case OptionType::kStringSet: return type_string_set(spec, raw);
  }
  return internal_error("option '", spec.name, "': unknown type");
}

bool applies(const OptionSpec& spec, const std::string& selected) {
  return spec.applies_to.empty() ||
         std::find(spec.applies_to.begin(), spec.applies_to.end(), selected) != spec.applies_to.end();
}

bool engaged(const EffectiveOption& entry, const OptionSpec& spec, const std::vector<std::string>& values) {
  if (!values.empty()) {
    return std::find(values.begin(), values.end(), option_value_string(entry.value)) != values.end();
  }
  if (spec.type == OptionType::kBool) {
    return std::get<bool>(entry.value);
  }
  return entry.given;
}

// "'online_prepare'" for an engaged bool, "'backend' = 'lpai'" otherwise.
std::string describe_engaged(const EffectiveOption& entry, const OptionSpec& spec) {
  if (spec.type == OptionType::kBool) {
    return str_cat("'", entry.name, "'");
  }
  return str_cat("'", entry.name, "' = '", option_value_string(entry.value), "'");
}

Status check_sdk(const SdkVersion& needed, const SdkInfo& sdk, const std::string& what) {
  const std::string sdk_name = sdk.name.empty() ? "SDK" : sdk.name;
  if (!sdk.version) {
    return failed_precondition(what, " needs ", sdk_name, " >= ", needed.to_string(), ": ", sdk_name,
                               " version unknown", sdk.unknown_reason.empty() ? "" : " (" + sdk.unknown_reason + ")");
  }
  if (*sdk.version < needed) {
    return failed_precondition(what, " needs ", sdk_name, " >= ", needed.to_string(), ", found ",
                               sdk.version->to_string(),
                               sdk.version_source.empty() ? "" : " (from " + sdk.version_source + ")");
  }
  return ok_status();
}

Status check_version_gates(const OptionSchema& schema, const std::vector<EffectiveOption>& entries,
                           const SdkInfo& sdk) {
  // The selector first: "backend = lpai needs 2.39" explains every LPAI-only option at once.
  std::vector<const EffectiveOption*> order;
  for (const EffectiveOption& entry : entries) {
    if (entry.name == schema.selector)
      order.insert(order.begin(), &entry);
    else
      order.push_back(&entry);
  }
  for (const EffectiveOption* entry : order) {
    const OptionSpec& spec = *schema.find(entry->name);
    if (spec.type == OptionType::kEnum) {
      const std::string& value = std::get<std::string>(entry->value);
      for (const AllowedValue& allowed : spec.allowed) {
        if (allowed.name == value && allowed.min_sdk_version) {
          STATICLM_RETURN_IF_ERROR(
              check_sdk(*allowed.min_sdk_version, sdk, str_cat("option '", entry->name, "' = '", value, "'")));
        }
      }
    }
    if (entry->given && spec.min_sdk_version) {
      STATICLM_RETURN_IF_ERROR(check_sdk(*spec.min_sdk_version, sdk, str_cat("option '", entry->name, "'")));
    }
  }
  return ok_status();
}

Status check_constraints(const OptionSchema& schema, const std::vector<EffectiveOption>& entries) {
  auto find_entry = [&](std::string_view name) -> const EffectiveOption* {
    for (const EffectiveOption& entry : entries) {
      if (entry.name == name) return &entry;
    }
    return nullptr;
  };
  for (const EffectiveOption& entry : entries) {
    const OptionSpec& spec = *schema.find(entry.name);
    for (const OptionConstraint& constraint : spec.constraints) {
      if (!engaged(entry, spec, constraint.when_values)) {
        continue;
      }
      const OptionSpec& other_spec = *schema.find(constraint.other);
      const EffectiveOption* other = find_entry(constraint.other);
      const bool other_engaged = other != nullptr && engaged(*other, other_spec, constraint.other_values);
      const std::string why = constraint.why.empty() ? "" : ": " + constraint.why;
      if (constraint.kind == OptionConstraint::Kind::kConflicts && other_engaged) {
        return invalid_argument("option ", describe_engaged(entry, spec), " conflicts with ",
                                describe_engaged(*other, other_spec), why);
      }
      if (constraint.kind == OptionConstraint::Kind::kRequires && !other_engaged) {
        const std::string wanted =
            constraint.other_values.empty() ? std::string("true") : "one of " + join(constraint.other_values, ", ");
        const std::string found =
            other == nullptr ? "not in effect" : "found '" + option_value_string(other->value) + "'";
        return invalid_argument("option ", describe_engaged(entry, spec), " requires '", constraint.other, "' to be ",
                                wanted, " (", found, ")", why);
      }
    }
  }
  return ok_status();
}

}  // namespace

Result<ResolvedOptions> resolve_options(const OptionSchema& schema, const OptionMap& options, const SdkInfo& sdk) {
  STATICLM_RETURN_IF_ERROR(check_schema(schema));
  const std::vector<std::string> known = schema.names();
  std::map<std::string, OptionValue, std::less<>> given;
  for (const auto& [name, raw] : options) {
    const OptionSpec* spec = schema.find(name);
    if (spec == nullptr) {
      return invalid_argument("unknown option '", name, "' for backend '", schema.backend_id, "'",
                              did_you_mean(name, known), "; `staticlm backends ", schema.backend_id,
                              "` lists the options");
    }
    STATICLM_ASSIGN_OR_RETURN(OptionValue value, type_value(*spec, raw));
    given.emplace(name, std::move(value));
  }

  std::string selected;
  if (!schema.selector.empty()) {
    const OptionSpec& selector = *schema.find(schema.selector);
    auto it = given.find(selector.name);
    if (it != given.end()) {
      selected = std::get<std::string>(it->second);
    } else if (selector.default_value) {
      selected = std::get<std::string>(*selector.default_value);
    }
  }

  std::vector<EffectiveOption> entries;
  for (const OptionSpec& spec : schema.options) {
    auto it = given.find(spec.name);
    const bool in_effect = schema.selector.empty() || spec.name == schema.selector || applies(spec, selected);
    if (it != given.end() && !in_effect) {
      return invalid_argument("option '", spec.name, "' applies to ", schema.selector, " ",
                              join(spec.applies_to, " | "), ", not ", schema.selector, " ", selected,
                              given.count(schema.selector) != 0 ? "" : " (the default)");
    }
    if (!in_effect) {
      continue;
    }
    if (it == given.end() && spec.required) {
      return invalid_argument("option '", spec.name, "' is required for backend '", schema.backend_id, "'",
                              spec.type == OptionType::kEnum ? " (one of " + allowed_names(spec) + ")" : "");
    }
    EffectiveOption entry;
    entry.name = spec.name;
    entry.given = it != given.end();
    entry.value = entry.given ? it->second : *spec.default_value;
    entry.route = spec.route == kRouteSelectedType ? selected : spec.route;
    entries.push_back(std::move(entry));
  }
  STATICLM_RETURN_IF_ERROR(check_version_gates(schema, entries, sdk));
  STATICLM_RETURN_IF_ERROR(check_constraints(schema, entries));
  return ResolvedOptions(schema.backend_id, selected, std::move(entries));
}

}  // namespace staticlm
