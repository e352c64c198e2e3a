// SPDX-License-Identifier: Apache-2.0
#include "staticlm/options/option_value.h"

#include <nlohmann/json.hpp>

#include "staticlm/json/strict_json.h"

namespace staticlm {

std::string_view option_type_name(OptionType type) {
  switch (type) {
    case OptionType::kBool: return "bool";
    case OptionType::kInt: return "int";
    case OptionType::kFloat: return "float";
    case OptionType::kString: return "string";
    case OptionType::kEnum: return "enum";
    case OptionType::kStringSet: return "string set";
  }
  return "unknown";
}

namespace {

std::string list_string(const std::vector<std::string>& items) {
  return "{" + join(items, ",") + "}";
}

}  // namespace

std::string option_value_string(const OptionValue& value) {
  switch (value.index()) {
    case 0: return std::get<bool>(value) ? "true" : "false";
    case 1: return std::to_string(std::get<int64_t>(value));
    case 2: return str_cat(std::get<double>(value));
    case 3: return std::get<std::string>(value);
    default: return list_string(std::get<std::vector<std::string>>(value));
  }
}

RawOptionValue RawOptionValue::text(std::string text, std::string origin) {
  RawOptionValue raw;
  raw.form = Form::kText;
  raw.value = std::move(text);
  raw.origin = std::move(origin);
  return raw;
}

std::string describe_raw_value(const RawOptionValue& raw) {
  switch (raw.form) {
    case RawOptionValue::Form::kText: return "'" + std::get<std::string>(raw.value) + "'";
    case RawOptionValue::Form::kBool: return str_cat("JSON bool ", std::get<bool>(raw.value) ? "true" : "false");
    case RawOptionValue::Form::kInt: return str_cat("JSON integer ", std::get<int64_t>(raw.value));
    case RawOptionValue::Form::kFloat: return str_cat("JSON number ", std::get<double>(raw.value));
    case RawOptionValue::Form::kString: return "JSON string \"" + std::get<std::string>(raw.value) + "\"";
    case RawOptionValue::Form::kStringList:
      return "JSON array " + list_string(std::get<std::vector<std::string>>(raw.value));
  }
  return "?";
}

Result<OptionMap> parse_option_assignments(std::span<const std::string> assignments, std::string_view origin) {
  OptionMap out;
  for (const std::string& assignment : assignments) {
    const size_t equals = assignment.find('=');
    if (equals == std::string::npos || equals == 0) {
      return invalid_argument(origin, " '", assignment, "': expected KEY=VALUE");
    }
    std::string key = assignment.substr(0, equals);
    if (out.count(key) != 0) {
      return invalid_argument(origin, ": '", key, "' is given twice");
    }
    out.emplace(std::move(key), RawOptionValue::text(assignment.substr(equals + 1), std::string(origin)));
  }
  return out;
}

Result<OptionMap> parse_options_json(std::string_view text, std::string_view file) {
  STATICLM_ASSIGN_OR_RETURN(nlohmann::json doc, parse_json_object(text, file));
  OptionMap out;
  for (const auto& [key, value] : doc.items()) {
    RawOptionValue raw;
    raw.origin = std::string(file);
    if (value.is_boolean()) {
      raw.form = RawOptionValue::Form::kBool;
      raw.value = value.get<bool>();
    } else if (value.is_number_integer()) {
      if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
        return invalid_argument("'", file, "': option '", key, "': ", value.dump(), " does not fit a 64-bit integer");
      }
      raw.form = RawOptionValue::Form::kInt;
      raw.value = value.get<int64_t>();
    } else if (value.is_number_float()) {
      raw.form = RawOptionValue::Form::kFloat;
      raw.value = value.get<double>();
    } else if (value.is_string()) {
      raw.form = RawOptionValue::Form::kString;
      raw.value = value.get<std::string>();
    } else if (value.is_array()) {
      std::vector<std::string> items;
      for (const nlohmann::json& item : value) {
        if (!item.is_string()) {
          return invalid_argument("'", file, "': option '", key, "': expected an array of strings, found element ",
                                  json_preview(item));
        }
        items.push_back(item.get<std::string>());
      }
      raw.form = RawOptionValue::Form::kStringList;
      raw.value = std::move(items);
    } else {
      return invalid_argument("'", file, "': option '", key,
                              "': expected a bool, number, string or array of strings, found ", json_preview(value));
    }
    out.emplace(key, std::move(raw));
  }
  return out;
}

Status merge_options(OptionMap& into, const OptionMap& extra) {
  for (const auto& [key, raw] : extra) {
    auto it = into.find(key);
    if (it != into.end()) {
      return invalid_argument("option '", key, "' is given twice",
                              it->second.origin.empty() || raw.origin.empty()
                                  ? std::string()
                                  : str_cat(" (", it->second.origin, " and ", raw.origin, ")"));
    }
    into.emplace(key, raw);
  }
  return ok_status();
}

}  // namespace staticlm
