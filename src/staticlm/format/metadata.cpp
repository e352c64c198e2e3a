// SPDX-License-Identifier: Apache-2.0
#include "staticlm/format/metadata.h"

#include <charconv>
#include <string_view>
#include <system_error>
#include <utility>

namespace staticlm {
namespace {

std::vector<int64_t> int_list(const flatbuffers::Vector<int64_t>* list) {
  if (list == nullptr) {
    return {};
  }
  return std::vector<int64_t>(list->begin(), list->end());
}

std::string string_value(const flatbuffers::String* value) {
  return value == nullptr ? std::string() : value->str();
}

std::string double_string(double value) {
  char buffer[64];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  if (error != std::errc()) {
    return str_cat(value);
  }
  return std::string(buffer, end);
}

// The entry under `key` when it has type `expected` (or one of `also_accepted`).
Result<const fb::MetadataEntry*> find_typed(const ProgramFile& file, std::string_view key, fb::MetadataType expected,
                                            std::optional<fb::MetadataType> also_accepted = std::nullopt) {
  const fb::MetadataEntry* entry = file.find_metadata(key);
  if (entry == nullptr) {
    return not_found("'", file.path(), "': metadata key '", key, "' is missing");
  }
  if (entry->type() != expected && entry->type() != also_accepted) {
    return invalid_argument("'", file.path(), "': metadata '", key, "': expected ", metadata_type_name(expected),
                            ", found ", metadata_type_name(entry->type()));
  }
  return entry;
}

}  // namespace

Result<int64_t> metadata_int(const ProgramFile& file, std::string_view key) {
  STATICLM_ASSIGN_OR_RETURN(const fb::MetadataEntry* entry, find_typed(file, key, fb::MetadataType::Int));
  return entry->int_value();
}

Result<double> metadata_float(const ProgramFile& file, std::string_view key) {
  STATICLM_ASSIGN_OR_RETURN(const fb::MetadataEntry* entry,
                            find_typed(file, key, fb::MetadataType::Float, fb::MetadataType::Int));
  if (entry->type() == fb::MetadataType::Int) {
    return static_cast<double>(entry->int_value());
  }
  return entry->float_value();
}

Result<std::string> metadata_string(const ProgramFile& file, std::string_view key) {
  STATICLM_ASSIGN_OR_RETURN(const fb::MetadataEntry* entry, find_typed(file, key, fb::MetadataType::String));
  return string_value(entry->string_value());
}

Result<bool> metadata_bool(const ProgramFile& file, std::string_view key) {
  STATICLM_ASSIGN_OR_RETURN(const fb::MetadataEntry* entry, find_typed(file, key, fb::MetadataType::Bool));
  return entry->bool_value();
}

Result<std::vector<int64_t>> metadata_int_list(const ProgramFile& file, std::string_view key) {
  STATICLM_ASSIGN_OR_RETURN(const fb::MetadataEntry* entry, find_typed(file, key, fb::MetadataType::IntList));
  return int_list(entry->int_list());
}

std::string_view metadata_type_name(fb::MetadataType type) {
  switch (type) {
    case fb::MetadataType::Int: return "int";
    case fb::MetadataType::Float: return "float";
    case fb::MetadataType::String: return "string";
    case fb::MetadataType::Bool: return "bool";
    case fb::MetadataType::IntList: return "int list";
  }
  return "unknown";
}

Result<MetadataValue> metadata_value(const fb::MetadataEntry& entry) {
  MetadataValue value;
  switch (entry.type()) {
    case fb::MetadataType::Int: value.emplace<int64_t>(entry.int_value()); return value;
    case fb::MetadataType::Float: value.emplace<double>(entry.float_value()); return value;
    case fb::MetadataType::String: value.emplace<std::string>(string_value(entry.string_value())); return value;
    case fb::MetadataType::Bool: value.emplace<bool>(entry.bool_value()); return value;
    case fb::MetadataType::IntList: value.emplace<std::vector<int64_t>>(int_list(entry.int_list())); return value;
  }
  return invalid_argument("metadata '", string_value(entry.key()), "': unknown type ", static_cast<int>(entry.type()));
}

std::string metadata_value_string(const fb::MetadataEntry& entry) {
  switch (entry.type()) {
    case fb::MetadataType::Int: return std::to_string(entry.int_value());
    case fb::MetadataType::Float: return double_string(entry.float_value());
    case fb::MetadataType::String: return string_value(entry.string_value());
    case fb::MetadataType::Bool: return entry.bool_value() ? "true" : "false";
    case fb::MetadataType::IntList: {
      const std::vector<int64_t> list = int_list(entry.int_list());
      return shape_string(list);
    }
  }
  return str_cat("<unknown metadata type ", static_cast<int>(entry.type()), ">");
}

Result<Attributes> attributes_from_fb(const flatbuffers::Vector<flatbuffers::Offset<fb::Attribute>>* attributes) {
  Attributes out;
  if (attributes == nullptr) {
    return out;
  }
  for (const fb::Attribute* attribute : *attributes) {
    std::string name = string_value(attribute->name());
    if (out.has(name)) {
      return invalid_argument("attribute '", name, "' appears twice");
    }
    switch (attribute->type()) {
      case fb::AttributeType::Int: out.set(std::move(name), attribute->int_value()); break;
      case fb::AttributeType::Float: out.set(std::move(name), attribute->float_value()); break;
      case fb::AttributeType::String: out.set(std::move(name), string_value(attribute->string_value())); break;
      case fb::AttributeType::IntList: out.set(std::move(name), int_list(attribute->int_list())); break;
      default: return invalid_argument("attribute '", name, "': unknown type ", static_cast<int>(attribute->type()));
    }
  }
  return out;
}

}  // namespace staticlm
