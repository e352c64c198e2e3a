// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/grammar/json_schema_one_of.h"

#include <algorithm>
#include <optional>

#include "staticlm/core/str_cat.h"

namespace staticlm::json_schema {
namespace {

using Json = nlohmann::ordered_json;

// Property comparisons one oneOf may take to show its alternatives exclusive.
constexpr size_t kMaxExclusivityWork = size_t{1} << 22;

class OneOfCheck {
 public:
  explicit OneOfCheck(const SchemaLookup& lookup) : lookup_(lookup) {}

  // The kinds of JSON value a schema may accept, as bits (a superset where it cannot tell).
  static constexpr int kAnyKind = 63;
  static int kind_of(const Json& value) {
    if (value.is_null()) return 1;
    if (value.is_boolean()) return 2;
    if (value.is_number()) return 4;
    if (value.is_string()) return 8;
    if (value.is_array()) return 16;
    return 32;
  }
  // `budget` bounds the nodes visited: references can make a small schema a large tree.
  int value_kinds(const Json& schema, int& budget) {
    const Json* node = lookup_.resolve(schema);
    if (node == nullptr || !node->is_object() || --budget < 0) {
      return kAnyKind;
    }
    for (const char* combiner : {"anyOf", "oneOf"}) {
      if (node->contains(combiner) && (*node)[combiner].is_array()) {
        int kinds = 0;
        for (const Json& alternative : (*node)[combiner]) {
          kinds |= value_kinds(alternative, budget);
        }
        return kinds;
      }
    }
    if (std::optional<std::vector<Json>> values = literal_values(*node)) {
      int kinds = 0;
      for (const Json& value : *values) {
        kinds |= kind_of(value);
      }
      return kinds;
    }
    Result<std::vector<std::string>> types = lookup_.types(*node);
    if (!types.ok()) {
      return kAnyKind;
    }
    int kinds = 0;
    for (const std::string& type : *types) {
      kinds |= type == "null"                          ? 1
               : type == "boolean"                     ? 2
               : type == "integer" || type == "number" ? 4
               : type == "string"                      ? 8
               : type == "array"                       ? 16
                                                       : 32;
    }
    return kinds;
  }

  // The only values a schema accepts, when it lists them (const / enum).
  std::optional<std::vector<Json>> literal_values(const Json& schema) const {
    const Json* node = lookup_.resolve(schema);
    if (node == nullptr || !node->is_object()) {
      return std::nullopt;
    }
    if (node->contains("const")) {
      return std::vector<Json>{(*node)["const"]};
    }
    if (node->contains("enum") && (*node)["enum"].is_array()) {
      return std::vector<Json>((*node)["enum"].begin(), (*node)["enum"].end());
    }
    return std::nullopt;
  }

  static bool disjoint(const std::vector<Json>& a, const std::vector<Json>& b) {
    return std::none_of(a.begin(), a.end(), [&](const Json& x) { return std::find(b.begin(), b.end(), x) != b.end(); });
  }

  // Whether no value can match both schemas, as far as types, listed values and a required
  // property's listed values show.
  // `a_kinds` and `b_kinds` are their value_kinds; `work` counts the property comparisons.
  bool exclusive(const Json& a_schema, const Json& b_schema, int a_kinds, int b_kinds, size_t& work) {
    ++work;
    if ((a_kinds & b_kinds) == 0) {
      return true;
    }
    std::optional<std::vector<Json>> a_values = literal_values(a_schema);
    std::optional<std::vector<Json>> b_values = literal_values(b_schema);
    if (a_values && b_values) {
      work += a_values->size() * b_values->size();
      return work <= kMaxExclusivityWork && disjoint(*a_values, *b_values);
    }
    const Json* a = lookup_.resolve(a_schema);
    const Json* b = lookup_.resolve(b_schema);
    if (a == nullptr || b == nullptr || !a->is_object() || !b->is_object() || !a->contains("required") ||
        !b->contains("required") || !(*a)["required"].is_array() || !(*b)["required"].is_array()) {
      return false;
    }
    work += (*a)["required"].size() * (*b)["required"].size();
    if (work > kMaxExclusivityWork) {
      return false;
    }
    for (const Json& name : (*a)["required"]) {
      const Json& b_required = (*b)["required"];
      if (!name.is_string() || std::find(b_required.begin(), b_required.end(), name) == b_required.end()) {
        continue;
      }
      const std::string key = name.get<std::string>();
      auto property = [&](const Json& object) -> const Json* {
        auto properties = object.find("properties");
        if (properties == object.end() || !properties->is_object() || !properties->contains(key)) {
          return nullptr;
        }
        return &(*properties)[key];
      };
      const Json* a_property = property(*a);
      const Json* b_property = property(*b);
      if (a_property == nullptr || b_property == nullptr) {
        continue;
      }
      std::optional<std::vector<Json>> a_listed = literal_values(*a_property);
      std::optional<std::vector<Json>> b_listed = literal_values(*b_property);
      if (a_listed && b_listed && disjoint(*a_listed, *b_listed)) {
        return true;
      }
    }
    return false;
  }

 private:
  const SchemaLookup& lookup_;
};

}  // namespace

Status check_one_of_exclusive(const Json& list, const SchemaLookup& lookup) {
  OneOfCheck check(lookup);
  std::vector<int> kinds;
  for (const Json& alternative : list) {
    int budget = 4096;
    kinds.push_back(check.value_kinds(alternative, budget));
  }
  size_t work = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    for (size_t j = i + 1; j < list.size(); ++j) {
      const bool apart = check.exclusive(list[i], list[j], kinds[i], kinds[j], work);
      if (work > kMaxExclusivityWork) {
        return invalid_argument("the ", list.size(),
                                " alternatives are too many to show that no value matches two: use anyOf");
      }
      if (!apart) {
        return invalid_argument("alternatives ", i, " and ", j,
                                " may both match one value, so exactly one cannot be enforced: use anyOf, or make "
                                "them differ in type or in a required property's const / enum values");
      }
    }
  }
  return ok_status();
}

}  // namespace staticlm::json_schema
