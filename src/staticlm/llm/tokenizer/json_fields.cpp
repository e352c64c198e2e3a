// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/tokenizer/json_fields.h"

#include <exception>

#include "staticlm/core/utf8.h"

namespace staticlm {
namespace {

std::string type_error(std::string_view where, std::string_view key, std::string_view expected, const Json& found) {
  return str_cat(field_name(where, key), ": expected ", expected, ", found ", json_preview(found));
}

}  // namespace

Result<Json> parse_json_document(std::string_view text, std::string_view file) {
  Json document;
  try {
    document = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& error) {
    return invalid_argument(file, ": malformed JSON at byte ", error.byte, ": ", error.what());
  } catch (const std::bad_alloc&) {
    return resource_exhausted(file, ": out of memory while parsing ", text.size(), " bytes of JSON");
  } catch (const std::exception& error) {
    return invalid_argument(file, ": malformed JSON: ", error.what());
  }
  if (!document.is_object()) {
    return invalid_argument(file, ": expected a JSON object at the top level, found ", json_preview(document));
  }
  return document;
}

const Json* find_member(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string field_name(std::string_view where, std::string_view key) {
  if (where.empty()) return std::string(key);
  return str_cat(where, ".", key);
}

Result<std::string> read_string(const Json& object, std::string_view key, std::string_view where) {
  const Json* member = find_member(object, key);
  if (member == nullptr) {
    return invalid_argument(field_name(where, key), ": required string is missing");
  }
  if (!member->is_string()) {
    return invalid_argument(type_error(where, key, "a string", *member));
  }
  return member->get<std::string>();
}

Result<std::optional<std::string>> read_optional_string(const Json& object, std::string_view key,
                                                        std::string_view where) {
  const Json* member = find_member(object, key);
  if (member == nullptr || member->is_null()) return std::optional<std::string>();
  if (!member->is_string()) {
    return invalid_argument(type_error(where, key, "a string or null", *member));
  }
  return std::optional<std::string>(member->get<std::string>());
}

Result<bool> read_bool(const Json& object, std::string_view key, bool fallback, std::string_view where) {
  const Json* member = find_member(object, key);
  if (member == nullptr || member->is_null()) return fallback;
  if (!member->is_boolean()) {
    return invalid_argument(type_error(where, key, "true or false", *member));
  }
  return member->get<bool>();
}

Result<int64_t> read_int(const Json& object, std::string_view key, int64_t fallback, int64_t min_value,
                         int64_t max_value, std::string_view where) {
  const Json* member = find_member(object, key);
  if (member == nullptr || member->is_null()) return fallback;
  if (!member->is_number_integer()) {
    return invalid_argument(type_error(where, key, "an integer", *member));
  }
  if (member->is_number_unsigned() && member->get<uint64_t>() > static_cast<uint64_t>(max_value)) {
    return invalid_argument(field_name(where, key), ": ", json_preview(*member), " is above the maximum ", max_value);
  }
  int64_t value = member->get<int64_t>();
  if (value < min_value || value > max_value) {
    return invalid_argument(field_name(where, key), ": ", value, " is outside [", min_value, ", ", max_value, "]");
  }
  return value;
}

Result<const Json*> read_array(const Json& object, std::string_view key, std::string_view where) {
  const Json* member = find_member(object, key);
  if (member == nullptr) {
    return invalid_argument(field_name(where, key), ": required array is missing");
  }
  if (!member->is_array()) {
    return invalid_argument(type_error(where, key, "an array", *member));
  }
  return member;
}

Result<std::string> read_component_type(const Json& component, std::string_view where) {
  if (!component.is_object()) {
    return invalid_argument(where, ": expected an object with a \"type\", found ", json_preview(component));
  }
  const Json* type = find_member(component, "type");
  if (type == nullptr || !type->is_string()) {
    return invalid_argument(where, ": expected a string \"type\" member, found ",
                            type == nullptr ? std::string("none") : json_preview(*type));
  }
  return type->get<std::string>();
}

Result<std::string> read_single_char(const Json& object, std::string_view key, std::string_view fallback,
                                     std::string_view where) {
  STATICLM_ASSIGN_OR_RETURN(std::optional<std::string> text, read_optional_string(object, key, where));
  std::string value = text.value_or(std::string(fallback));
  char32_t code_point = 0;
  if (value.empty() || utf8_decode_char(value, 0, code_point) != value.size()) {
    return invalid_argument(field_name(where, key), ": expected exactly one character, found \"", utf8_repair(value),
                            "\"");
  }
  return value;
}

}  // namespace staticlm
