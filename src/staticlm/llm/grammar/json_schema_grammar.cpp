// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/grammar/json_schema_grammar.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "staticlm/core/utf8.h"
#include "staticlm/json/strict_json.h"
#include "staticlm/llm/grammar/json_schema_one_of.h"
#include "staticlm/llm/grammar/json_schema_parts.h"

namespace staticlm {
namespace {

using Json = nlohmann::ordered_json;
using json_schema::gbnf_literal;

constexpr int kMaxSchemaDepth = 128;
constexpr int64_t kMaxCount = 10000;  // the largest minItems / maxItems / minLength / maxLength
// Integers without a bound on a side get at most 15 digits there (as llama.cpp's converter).
constexpr int64_t kOpenIntegerBound = 999999999999999;

constexpr std::string_view kAnnotations[] = {"title",    "description", "default",  "examples",
                                             "$schema",  "$id",         "$comment", "deprecated",
                                             "readOnly", "writeOnly",   "$defs",    "definitions"};
constexpr std::string_view kKeywords[] = {"type",
                                          "properties",
                                          "required",
                                          "additionalProperties",
                                          "enum",
                                          "const",
                                          "items",
                                          "prefixItems",
                                          "minItems",
                                          "maxItems",
                                          "anyOf",
                                          "oneOf",
                                          "$ref",
                                          "minLength",
                                          "maxLength",
                                          "pattern",
                                          "format",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum"};
constexpr std::string_view kTypes[] = {"null", "boolean", "integer", "number", "string", "array", "object"};

template <size_t N>
bool one_of(std::string_view name, const std::string_view (&names)[N]) {
  for (std::string_view candidate : names) {
    if (candidate == name) {
      return true;
    }
  }
  return false;
}

std::string pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  }
  return out;
}

// The rules every schema may use; each is added once, when first needed.
const std::map<std::string, std::string, std::less<>>& primitive_rules() {
  static const std::map<std::string, std::string, std::less<>> rules = {
      {"_ws", R"(| " " | "\n" [ \t]{0,20})"},
      {"_char", std::string(json_schema::kJsonCharRule.substr(json_schema::kJsonCharRule.find("::=") + 4))},
      {"_string", R"("\"" _char* "\"")"},
      {"_plain-char", R"([^"\\\x00-\x1F])"},
      {"_integer", R"("-"? ("0" | [1-9] [0-9]{0,14}))"},
      {"_number", R"("-"? ("0" | [1-9] [0-9]{0,14}) ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,2})?)"},
      {"_boolean", R"("true" | "false")"},
      {"_value", R"(_object | _array | _string | _number | _boolean | "null")"},
      {"_object", R"("{" _ws (_string _ws ":" _ws _value _ws ("," _ws _string _ws ":" _ws _value _ws)*)? "}")"},
      {"_array", R"("[" _ws (_value _ws ("," _ws _value _ws)*)? "]")"},
      {"_year", R"([0-9]{4})"},
      {"_leap-year",
       R"([0-9]{2} ("0" [48] | [2468] [048] | [13579] [26]) | ("0" [048] | [2468] [048] | [13579] [26]) "00")"},
      {"_date",
       R"(_year "-" (("0" [13578] | "1" [02]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]) | ("0" [469] | "11") "-" ("0" [1-9] | [12] [0-9] | "30") | "02-" ("0" [1-9] | "1" [0-9] | "2" [0-8])) | _leap-year "-02-29")"},
      {"_time",
       R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,6})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]))"},
      {"_date-time", R"(_date "T" _time)"},
      {"_uuid", R"([0-9a-f]{8} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{12})"},
  };
  return rules;
}

// Names of primitive rules a primitive rule's body uses.
std::vector<std::string> referenced_primitives(std::string_view body) {
  std::vector<std::string> out;
  for (const auto& [name, unused] : primitive_rules()) {
    for (size_t at = body.find(name); at != std::string_view::npos; at = body.find(name, at + 1)) {
      const size_t end = at + name.size();
      const bool starts = at == 0 || body[at - 1] == ' ' || body[at - 1] == '(' || body[at - 1] == '|';
      const bool ends = end == body.size() || body[end] == ' ' || body[end] == ')' || body[end] == '*' ||
                        body[end] == '?' || body[end] == '{';
      if (starts && ends) {
        out.push_back(name);
        break;
      }
    }
  }
  return out;
}

class SchemaCompiler {
 public:
  // `root_rule` names the schema's rule; "root" stays free for a grammar that wraps it.
  SchemaCompiler(const Json& root, std::string root_rule) : root_(root), root_rule_(std::move(root_rule)) {
    reserve(root_rule_);
    used_.insert("root");
  }

  Result<std::string> compile() {
    STATICLM_ASSIGN_OR_RETURN(std::string body, visit(root_, "", root_rule_, 0));
    bodies_[0] = std::move(body);
    std::string out;
    for (size_t i = 0; i < names_.size(); ++i) {
      out += names_[i] + " ::= " + bodies_[i] + "\n";
    }
    return out;
  }

 private:
  static Status error(std::string_view pointer, std::string_view message) {
    return invalid_argument("json_schema: ", message, " at ", pointer.empty() ? "/" : pointer);
  }

  size_t reserve(const std::string& wanted) {
    std::string name = wanted;
    for (int n = 2; used_.count(name) != 0; ++n) {
      name = wanted + "-" + std::to_string(n);
    }
    used_.insert(name);
    names_.push_back(name);
    bodies_.emplace_back();
    return names_.size() - 1;
  }

  std::string rule(const std::string& hint, std::string body) {
    const size_t index = reserve(hint);
    bodies_[index] = std::move(body);
    return names_[index];
  }

  std::string primitive(const std::string& name) {
    if (used_.count(name) == 0) {
      const std::string& body = primitive_rules().at(name);
      rule(name, body);
      for (const std::string& dependency : referenced_primitives(body)) {
        primitive(dependency);
      }
    }
    return name;
  }

  std::string ws() { return primitive("_ws"); }

  static std::string rule_hint(std::string_view text) {
    std::string out;
    for (char c : text) {
      const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      if (word) {
        out += c;
      } else if (!out.empty() && out.back() != '-') {
        out += '-';
      }
      if (out.size() >= 32) {
        break;
      }
    }
    while (!out.empty() && out.back() == '-') {
      out.pop_back();
    }
    return out.empty() ? "item" : out;
  }

  Result<std::string> visit(const Json& schema, const std::string& pointer, const std::string& hint, int depth) {
    if (depth > kMaxSchemaDepth) {
      return error(pointer, str_cat("schemas nest deeper than ", kMaxSchemaDepth, " levels"));
    }
    if (schema.is_boolean()) {
      if (schema.get<bool>()) {
        return primitive("_value");
      }
      return error(pointer, "the schema 'false' allows no value");
    }
    if (!schema.is_object()) {
      return error(pointer, str_cat("a schema must be an object or a boolean, found ", schema.type_name()));
    }
    for (const auto& [key, value] : schema.items()) {
      if (!one_of(key, kKeywords) && !one_of(key, kAnnotations)) {
        return error(pointer, str_cat("unsupported keyword '", key, "'"));
      }
    }
    auto constraining_except = [&](std::initializer_list<std::string_view> allowed) -> std::string {
      for (const auto& [key, value] : schema.items()) {
        if (one_of(key, kKeywords) && std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
          return key;
        }
      }
      return "";
    };
    if (schema.contains("$ref")) {
      if (std::string other = constraining_except({"$ref"}); !other.empty()) {
        return error(pointer, str_cat("'$ref' together with '", other, "' is not supported"));
      }
      return reference(schema["$ref"], pointer + "/$ref", depth);
    }
    for (const char* combiner : {"anyOf", "oneOf"}) {
      if (schema.contains(combiner)) {
        if (std::string other = constraining_except({combiner}); !other.empty()) {
          return error(pointer, str_cat("'", combiner, "' together with '", other, "' is not supported"));
        }
        return alternatives(schema[combiner], pointer + "/" + combiner, hint, depth,
                            /*only_one=*/std::string_view(combiner) == "oneOf");
      }
    }
    if (schema.contains("enum") || schema.contains("const")) {
      return enumeration(schema, pointer, constraining_except({"enum", "const", "type"}));
    }
    STATICLM_ASSIGN_OR_RETURN(std::vector<std::string> types, schema_types(schema, pointer));
    std::vector<std::string> parts;
    for (const std::string& type : types) {
      STATICLM_ASSIGN_OR_RETURN(std::string part, typed(type, schema, pointer, hint, depth));
      parts.push_back(std::move(part));
    }
    return parts.size() == 1 ? parts[0] : "(" + join(parts, " | ") + ")";
  }

  // The types a schema names, or those its keywords imply (any value when none).
  Result<std::vector<std::string>> schema_types(const Json& schema, const std::string& pointer) {
    std::vector<std::string> types;
    if (auto it = schema.find("type"); it != schema.end()) {
      const Json listed = it->is_array() ? *it : Json::array({*it});
      if (listed.empty()) {
        return error(pointer + "/type", "an empty list of types allows no value");
      }
      for (const Json& type : listed) {
        if (!type.is_string() || !one_of(type.get<std::string>(), kTypes)) {
          return error(pointer + "/type", str_cat("unknown type ", type.dump(),
                                                  " (null, boolean, integer, number, string, array, object)"));
        }
        types.push_back(type.get<std::string>());
      }
      return types;
    }
    auto has_any = [&](std::initializer_list<const char*> keys) {
      for (const char* key : keys) {
        if (schema.contains(key)) {
          return true;
        }
      }
      return false;
    };
    if (has_any({"properties", "required", "additionalProperties"})) types.push_back("object");
    if (has_any({"items", "prefixItems", "minItems", "maxItems"})) types.push_back("array");
    if (has_any({"minLength", "maxLength", "pattern", "format"})) types.push_back("string");
    if (has_any({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) types.push_back("integer");
    if (types.empty()) {
      types = {"object", "array", "string", "number", "boolean", "null"};
    }
    return types;
  }

  Result<std::string> reference(const Json& ref, const std::string& pointer, int depth) {
    if (!ref.is_string() || ref.get<std::string>().rfind('#', 0) != 0) {
      return error(pointer, "only local references ('#', '#/$defs/NAME') are supported");
    }
    const std::string target = ref.get<std::string>();
    if (auto it = ref_rules_.find(target); it != ref_rules_.end()) {
      return it->second;
    }
    std::string last = "root";
    STATICLM_ASSIGN_OR_RETURN(const Json* node, find(target, pointer, last));
    if (target == "#") {
      ref_rules_[target] = root_rule_;
      return root_rule_;
    }
    // Named before the target is compiled, so a recursive reference finds the name.
    const size_t index = reserve(rule_hint(last));
    const std::string name = names_[index];  // names_ grows while the target compiles
    ref_rules_[target] = name;
    STATICLM_ASSIGN_OR_RETURN(std::string body, visit(*node, target.substr(1), name, depth + 1));
    bodies_[index] = std::move(body);
    return name;
  }

  // The node local reference `target` names; `last` its last key (for the rule's name).
  Result<const Json*> find(const std::string& target, const std::string& pointer, std::string& last) const {
    const Json* node = &root_;
    std::string_view rest = std::string_view(target).substr(1);
    while (!rest.empty()) {
      if (rest[0] != '/') {
        return error(pointer, str_cat("'", target, "' is not a JSON pointer"));
      }
      rest.remove_prefix(1);
      const size_t slash = rest.find('/');
      std::string token(rest.substr(0, slash));
      rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
      std::string key;
      for (size_t i = 0; i < token.size(); ++i) {
        if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
          key += token[i + 1] == '0' ? '~' : '/';
          ++i;
        } else {
          key += token[i];
        }
      }
      if (node->is_object() && node->contains(key)) {
        node = &(*node)[key];
      } else if (node->is_array() && !key.empty() && key.find_first_not_of("0123456789") == std::string::npos &&
                 key.size() < 10 && std::stoul(key) < node->size()) {
        node = &(*node)[std::stoul(key)];
      } else {
        return error(pointer, str_cat("'", target, "' does not resolve"));
      }
      last = key;
    }
    return node;
  }

  // `schema` with its chain of references followed; null where one does not resolve.
  const Json* resolved(const Json& schema) const {
    const Json* node = &schema;
    std::string unused;
    for (int hops = 0; hops < 16 && node->is_object() && node->contains("$ref"); ++hops) {
      const Json& ref = (*node)["$ref"];
      if (!ref.is_string() || ref.get<std::string>().rfind('#', 0) != 0) {
        return nullptr;
      }
      Result<const Json*> target = find(ref.get<std::string>(), "", unused);
      if (!target.ok()) {
        return nullptr;
      }
      node = *target;
    }
    return node;
  }

  Result<std::string> alternatives(const Json& list, const std::string& pointer, const std::string& hint, int depth,
                                   bool only_one) {
    if (!list.is_array() || list.empty()) {
      return error(pointer, "expected a non-empty array of schemas");
    }
    // A grammar takes a text that any alternative matches; "exactly one" holds only where no
    // value can match two, so oneOf is compiled where that can be shown and refused elsewhere.
    if (only_one) {
      const json_schema::SchemaLookup lookup{[this](const Json& schema) { return resolved(schema); },
                                             [this](const Json& schema) { return schema_types(schema, ""); }};
      if (Status apart = json_schema::check_one_of_exclusive(list, lookup); !apart.ok()) {
        return error(pointer, apart.message());
      }
    }
    std::vector<std::string> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      STATICLM_ASSIGN_OR_RETURN(std::string part, visit(list[i], pointer + "/" + std::to_string(i),
                                                        hint + "-" + std::to_string(i), depth + 1));
      parts.push_back(std::move(part));
    }
    return rule(hint, join(parts, " | "));
  }

  static bool has_type(const Json& value, std::string_view type) {
    if (type == "null") return value.is_null();
    if (type == "boolean") return value.is_boolean();
    if (type == "integer")
      return value.is_number_integer() ||
             (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>());
    if (type == "number") return value.is_number();
    if (type == "string") return value.is_string();
    if (type == "array") return value.is_array();
    return value.is_object();
  }

  Result<std::string> enumeration(const Json& schema, const std::string& pointer, const std::string& other) {
    if (schema.contains("enum") && schema.contains("const")) {
      return error(pointer, "'enum' together with 'const' is not supported");
    }
    const char* keyword = schema.contains("enum") ? "enum" : "const";
    if (!other.empty()) {
      return error(pointer, str_cat("'", keyword, "' together with '", other, "' is not supported"));
    }
    const Json values = schema.contains("enum") ? schema["enum"] : Json::array({schema["const"]});
    if (!values.is_array() || values.empty()) {
      return error(pointer + "/enum", "expected a non-empty array");
    }
    std::vector<std::string> types;
    if (schema.contains("type")) {
      STATICLM_ASSIGN_OR_RETURN(types, schema_types(schema, pointer));
    }
    std::vector<std::string> parts;
    for (const Json& value : values) {
      const bool typed_ok = types.empty() || std::any_of(types.begin(), types.end(),
                                                         [&](const std::string& t) { return has_type(value, t); });
      if (typed_ok) {
        parts.push_back(gbnf_literal(value.dump(-1, ' ', false, Json::error_handler_t::replace)));
      }
    }
    if (parts.empty()) {
      return error(pointer, str_cat("no value of '", keyword, "' has the schema's type: no value is valid"));
    }
    return parts.size() == 1 ? parts[0] : "(" + join(parts, " | ") + ")";
  }

  static Result<std::optional<int64_t>> count_keyword(const Json& schema, const std::string& pointer,
                                                      const char* keyword) {
    auto it = schema.find(keyword);
    if (it == schema.end()) {
      return std::optional<int64_t>();
    }
    if (!it->is_number_integer() || it->get<int64_t>() < 0) {
      return error(pointer + "/" + keyword, "expected a non-negative integer");
    }
    if (it->get<int64_t>() > kMaxCount) {
      return error(pointer + "/" + keyword, str_cat("values above ", kMaxCount, " are not supported"));
    }
    return std::optional<int64_t>(it->get<int64_t>());
  }

  static std::string repeat_suffix(int64_t low, std::optional<int64_t> high) {
    if (!high) {
      return low == 0 ? "*" : low == 1 ? "+" : "{" + std::to_string(low) + ",}";
    }
    return "{" + std::to_string(low) + "," + std::to_string(*high) + "}";
  }

  Result<std::string> typed(const std::string& type, const Json& schema, const std::string& pointer,
                            const std::string& hint, int depth) {
    if (type == "null") return std::string("\"null\"");
    if (type == "boolean") return primitive("_boolean");
    if (type == "integer") return integer(schema, pointer);
    if (type == "number") {
      for (const char* bound : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
        if (schema.contains(bound)) {
          return error(pointer, str_cat("'", bound, "' on a number is not supported (only on integers)"));
        }
      }
      return primitive("_number");
    }
    if (type == "string") return string(schema, pointer, hint);
    if (type == "array") return array(schema, pointer, hint, depth);
    return object(schema, pointer, hint, depth);
  }

  Result<std::string> integer(const Json& schema, const std::string& pointer) {
    std::optional<int64_t> low;
    std::optional<int64_t> high;
    for (const char* keyword : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
      auto it = schema.find(keyword);
      if (it == schema.end()) {
        continue;
      }
      if (!it->is_number()) {
        return error(pointer + "/" + keyword, "expected a number");
      }
      const double value = it->get<double>();
      if (!(std::fabs(value) < 9.2e18)) {
        return error(pointer + "/" + keyword, "bounds beyond 64-bit integers are not supported");
      }
      const std::string_view name(keyword);
      if (name == "minimum") low = std::max(low.value_or(INT64_MIN), static_cast<int64_t>(std::ceil(value)));
      if (name == "exclusiveMinimum")
        low = std::max(low.value_or(INT64_MIN), static_cast<int64_t>(std::floor(value)) + 1);
      if (name == "maximum") high = std::min(high.value_or(INT64_MAX), static_cast<int64_t>(std::floor(value)));
      if (name == "exclusiveMaximum")
        high = std::min(high.value_or(INT64_MAX), static_cast<int64_t>(std::ceil(value)) - 1);
    }
    if (!low && !high) {
      return primitive("_integer");
    }
    if (!low) low = *high >= -kOpenIntegerBound ? -kOpenIntegerBound : INT64_MIN;
    if (!high) high = *low <= kOpenIntegerBound ? kOpenIntegerBound : INT64_MAX;
    if (*low > *high) {
      return error(pointer, str_cat("no integer lies between the bounds (", *low, " > ", *high, ")"));
    }
    return "(" + json_schema::integer_range(*low, *high) + ")";
  }

  Result<std::string> string(const Json& schema, const std::string& pointer, const std::string& hint) {
    STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> min_length, count_keyword(schema, pointer, "minLength"));
    STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> max_length, count_keyword(schema, pointer, "maxLength"));
    const bool lengths = min_length || max_length;
    if (auto it = schema.find("format"); it != schema.end()) {
      if (lengths || schema.contains("pattern")) {
        return error(pointer, "'format' together with 'pattern', 'minLength' or 'maxLength' is not supported");
      }
      const std::string format = it->is_string() ? it->get<std::string>() : "";
      if (format != "date" && format != "time" && format != "date-time" && format != "uuid") {
        return error(pointer + "/format",
                     str_cat("format ", it->dump(), " is not supported (date, time, date-time, uuid)"));
      }
      return "\"\\\"\" " + primitive("_" + format) + " \"\\\"\"";
    }
    if (auto it = schema.find("pattern"); it != schema.end()) {
      if (lengths) {
        return error(pointer, "'pattern' together with 'minLength' or 'maxLength' is not supported");
      }
      if (!it->is_string()) {
        return error(pointer + "/pattern", "expected a string");
      }
      Result<std::string> content = json_schema::pattern_to_gbnf(it->get<std::string>());
      if (!content.ok()) {
        return error(pointer + "/pattern", content.status().message());
      }
      return rule(hint, "\"\\\"\" " + *content + " \"\\\"\"");
    }
    if (!lengths) {
      return primitive("_string");
    }
    const int64_t low = min_length.value_or(0);
    if (max_length && *max_length < low) {
      return error(pointer, "'maxLength' is below 'minLength': no string is valid");
    }
    return "\"\\\"\" " + primitive("_char") + repeat_suffix(low, max_length) + " \"\\\"\"";
  }

  Result<std::string> array(const Json& schema, const std::string& pointer, const std::string& hint, int depth) {
    STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> min_items, count_keyword(schema, pointer, "minItems"));
    STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> max_items, count_keyword(schema, pointer, "maxItems"));
    std::vector<std::string> prefix;
    if (auto it = schema.find("prefixItems"); it != schema.end()) {
      if (!it->is_array()) {
        return error(pointer + "/prefixItems", "expected an array of schemas");
      }
      for (size_t i = 0; i < it->size(); ++i) {
        STATICLM_ASSIGN_OR_RETURN(std::string element, visit((*it)[i], pointer + "/prefixItems/" + std::to_string(i),
                                                             hint + "-" + std::to_string(i), depth + 1));
        prefix.push_back(std::move(element));
      }
    }
    std::optional<std::string> item;  // empty: no items after the prefix
    if (auto it = schema.find("items"); it != schema.end()) {
      if (it->is_array()) {
        return error(pointer + "/items", "'items' as an array (draft-07 tuples) is not supported; use 'prefixItems'");
      }
      if (!(it->is_boolean() && !it->get<bool>())) {
        STATICLM_ASSIGN_OR_RETURN(item, visit(*it, pointer + "/items", hint + "-item", depth + 1));
      }
    } else {
      item = primitive("_value");
    }
    const auto prefix_size = static_cast<int64_t>(prefix.size());
    const int64_t low = min_items.value_or(0);
    std::optional<int64_t> high = max_items;
    if (!item) {
      high = std::min(high.value_or(prefix_size), prefix_size);
    }
    if (high && *high < low) {
      return error(pointer, "no array length satisfies minItems, maxItems, prefixItems and items");
    }
    const std::string w = ws();
    if (high && *high == 0) {
      return "\"[\" " + w + " \"]\"";
    }
    // tail(i): the elements from i on, given that element i - 1 is there.
    std::string tail;
    {
      const int64_t start = std::max<int64_t>(prefix_size, 1);
      const int64_t rest_low = std::max<int64_t>(0, low - start);
      std::optional<int64_t> rest_high;
      if (high) rest_high = std::max<int64_t>(0, *high - start);
      if (item && (!rest_high || *rest_high > 0)) {
        tail = "(\",\" " + w + " " + *item + " " + w + ")" + repeat_suffix(rest_low, rest_high);
      }
      for (int64_t i = prefix_size - 1; i >= 1; --i) {
        if (high && i >= *high) {
          continue;
        }
        std::string segment =
            "\",\" " + w + " " + prefix[static_cast<size_t>(i)] + " " + w + (tail.empty() ? "" : " " + tail);
        tail = rule(hint + "-tail", i < low ? segment : "(" + segment + ")?");
      }
    }
    const std::string first = (prefix.empty() ? *item : prefix[0]) + " " + w + (tail.empty() ? "" : " " + tail);
    const std::string body = low == 0 ? "(" + first + ")?" : first;
    return rule(hint, "\"[\" " + w + " " + body + " \"]\"");
  }

  // The content of a JSON string that is none of `keys` and needs no escape: a trie of the keys,
  // where each node may end (unless a key ends there), go on along a key, or leave the keys.
  std::string key_not_in(const std::vector<std::string>& keys, const std::string& hint) {
    struct Node {
      std::map<char32_t, size_t> children;
      bool key_ends = false;
    };
    std::vector<Node> nodes(1);
    for (const std::string& key : keys) {
      size_t at = 0;
      bool plain = true;
      utf8_walk(key, [&](char32_t c, size_t, size_t) {
        plain = plain && c >= 0x20 && c != '"' && c != '\\';
        return plain;
      });
      if (!plain) {
        continue;  // its JSON spelling has an escape, which a plain key never has
      }
      utf8_walk(key, [&](char32_t c, size_t, size_t) {
        auto [it, inserted] = nodes[at].children.emplace(c, nodes.size());
        if (inserted) {
          nodes.emplace_back();
        }
        at = it->second;
        return true;
      });
      nodes[at].key_ends = true;
    }
    const std::string plain_char = primitive("_plain-char");
    std::vector<std::string> names(nodes.size());
    std::vector<size_t> indices(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      indices[i] = reserve(hint + "-key");
      names[i] = names_[indices[i]];
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      std::vector<std::string> parts;
      if (!nodes[i].key_ends) {
        parts.push_back("\"\"");
      }
      std::vector<CodePointRange> taken = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
      for (const auto& [c, child] : nodes[i].children) {
        std::string text;
        utf8_append(text, c);
        parts.push_back(gbnf_literal(text) + " " + names[child]);
        taken.push_back({c, c});
      }
      const std::string other = json_schema::json_string_char(complement_ranges(normalize_ranges(taken)));
      parts.push_back(other + " " + plain_char + "*");
      bodies_[indices[i]] = join(parts, " | ");
    }
    return names[0];
  }

  Result<std::string> object(const Json& schema, const std::string& pointer, const std::string& hint, int depth) {
    const Json properties = schema.value("properties", Json::object());
    if (!properties.is_object()) {
      return error(pointer + "/properties", "expected an object");
    }
    std::vector<std::string> required;
    if (auto it = schema.find("required"); it != schema.end()) {
      if (!it->is_array()) {
        return error(pointer + "/required", "expected an array of property names");
      }
      for (const Json& name : *it) {
        if (!name.is_string()) {
          return error(pointer + "/required", "expected an array of property names");
        }
        if (std::find(required.begin(), required.end(), name.get<std::string>()) == required.end()) {
          required.push_back(name.get<std::string>());
        }
      }
    }
    // Extra properties: none when `properties` lists them and additionalProperties is absent (as
    // llama.cpp's converter), any value when neither is given.
    std::optional<Json> additional;
    if (auto it = schema.find("additionalProperties"); it != schema.end()) {
      if (!(it->is_boolean() && !it->get<bool>())) {
        additional = *it;
      }
    } else if (properties.empty()) {
      additional = Json(true);
    }
    const std::string w = ws();
    struct Member {
      std::string text;
      bool required;
    };
    std::vector<Member> members;
    std::vector<std::string> declared;
    auto is_required = [&](const std::string& key) {
      return std::find(required.begin(), required.end(), key) != required.end();
    };
    for (const auto& [key, subschema] : properties.items()) {
      declared.push_back(key);
      const std::string where = pointer + "/properties/" + pointer_token(key);
      if (subschema.is_boolean() && !subschema.get<bool>()) {
        if (is_required(key)) {
          return error(where, str_cat("required property '", key, "' has the schema 'false'"));
        }
        continue;
      }
      STATICLM_ASSIGN_OR_RETURN(std::string value, visit(subschema, where, hint + "-" + rule_hint(key), depth + 1));
      members.push_back({gbnf_literal(Json(key).dump(-1, ' ', false, Json::error_handler_t::replace)) + " " + w +
                             " \":\" " + w + " " + value + " " + w,
                         is_required(key)});
    }
    for (const std::string& key : required) {
      if (properties.contains(key)) {
        continue;
      }
      if (!additional) {
        return error(pointer + "/required",
                     str_cat("required property '", key, "' is not allowed by additionalProperties"));
      }
      declared.push_back(key);
      STATICLM_ASSIGN_OR_RETURN(std::string value, visit(*additional, pointer + "/additionalProperties",
                                                         hint + "-" + rule_hint(key), depth + 1));
      members.push_back({gbnf_literal(Json(key).dump(-1, ' ', false, Json::error_handler_t::replace)) + " " + w +
                             " \":\" " + w + " " + value + " " + w,
                         true});
    }
    std::string extra;  // one more property of any other name, with its trailing space
    if (additional) {
      STATICLM_ASSIGN_OR_RETURN(std::string value,
                                visit(*additional, pointer + "/additionalProperties", hint + "-value", depth + 1));
      const std::string key =
          declared.empty() ? primitive("_string") : "\"\\\"\" " + key_not_in(declared, hint) + " \"\\\"\"";
      extra = rule(hint + "-extra", key + " " + w + " \":\" " + w + " " + value + " " + w);
    }
    const std::string separator = "\",\" " + w + " ";
    // rest(i): members from i on after one is already written; first(i): none written yet.
    const size_t n = members.size();
    std::vector<std::string> rest(n + 1);
    std::vector<std::string> first(n + 1);
    rest[n] = extra.empty() ? "\"\"" : "(" + separator + extra + ")*";
    first[n] = extra.empty() ? "\"\"" : "(" + extra + " " + rest[n] + ")?";
    if (n > 0) {
      rest[n] = rule(hint + "-rest", rest[n]);
      first[n] = rule(hint + "-first", first[n]);
    }
    for (size_t i = n; i-- > 0;) {
      const std::string with = separator + members[i].text + " " + rest[i + 1];
      rest[i] = rule(hint + "-rest", members[i].required ? with : "(" + with + ") | " + rest[i + 1]);
      const std::string starts = members[i].text + " " + rest[i + 1];
      first[i] = rule(hint + "-first", members[i].required ? starts : starts + " | " + first[i + 1]);
    }
    return rule(hint, "\"{\" " + w + " " + first[0] + " \"}\"");
  }

  const Json& root_;
  const std::string root_rule_;
  std::vector<std::string> names_;
  std::vector<std::string> bodies_;
  std::set<std::string> used_;
  std::map<std::string, std::string> ref_rules_;
};

}  // namespace

Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema) {
  return json_schema_rules(schema, "root");
}

Result<std::string> json_schema_rules(const nlohmann::ordered_json& schema, std::string_view rule_name) {
  SchemaCompiler compiler(schema, std::string(rule_name));
  return compiler.compile();
}

Result<std::string> json_schema_to_gbnf(std::string_view schema_text) {
  const int deepest = json_nesting_depth(schema_text);
  if (deepest > kMaxSchemaDepth) {
    return invalid_argument("json_schema: the schema nests deeper than ", kMaxSchemaDepth, " levels");
  }
  Json schema = Json::parse(schema_text, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) {
    return invalid_argument("json_schema: not valid JSON");
  }
  return json_schema_to_gbnf(schema);
}

std::string any_json_object_gbnf() {
  std::string out = "root ::= _object\n";
  for (const char* name : {"_object", "_ws", "_string", "_char", "_value", "_array", "_number", "_boolean"}) {
    out += std::string(name) + " ::= " + primitive_rules().at(name) + "\n";
  }
  return out;
}

}  // namespace staticlm
