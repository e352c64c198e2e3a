// SPDX-License-Identifier: Apache-2.0
// The str, list and dict methods templates call (message.content.strip(), tool.get('x'), ...).
#include <algorithm>
#include <array>

#include "staticlm/chat/jinja/builtins.h"
#include "staticlm/chat/jinja/interpreter.h"
#include "staticlm/chat/jinja/python_strings.h"

namespace staticlm::jinja {
namespace {

using Method = Result<Value> (*)(const Value& self, Arguments arguments);

Result<std::optional<std::string>> optional_string(const Value& value, std::string_view function) {
  if (value.is_none()) {
    return std::optional<std::string>();
  }
  if (!value.is_string()) {
    return invalid_argument(function, "() argument must be str or None, not ", value.type_name());
  }
  return std::optional<std::string>(value.as_string());
}

Result<std::string> required_string(const Value& value, std::string_view function) {
  if (!value.is_string()) {
    return invalid_argument(function, "() argument must be str, not ", value.type_name());
  }
  return value.as_string();
}

Result<int64_t> required_int(const Value& value, std::string_view function) {
  if (!value.is_int() && !value.is_bool()) {
    return invalid_argument(function, "() argument must be an integer, not ", value.type_name());
  }
  return value.to_int();
}

Result<Value> strip_method(const Value& self, Arguments arguments, std::string_view name, StripSide side) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values,
                            bind_arguments(name, std::move(arguments), {{"chars", Value(NoneType{})}}));
  STATICLM_ASSIGN_OR_RETURN(std::optional<std::string> characters, optional_string(values[0], name));
  return Value(python_strip(self.as_string(), characters, side));
}

Result<Value> split_method(const Value& self, Arguments arguments, std::string_view name, bool from_right) {
  STATICLM_ASSIGN_OR_RETURN(
      std::vector<Value> values,
      bind_arguments(name, std::move(arguments), {{"sep", Value(NoneType{})}, {"maxsplit", Value(int64_t{-1})}}));
  STATICLM_ASSIGN_OR_RETURN(std::optional<std::string> separator, optional_string(values[0], name));
  STATICLM_ASSIGN_OR_RETURN(int64_t max_splits, required_int(values[1], name));
  STATICLM_ASSIGN_OR_RETURN(std::vector<std::string> pieces,
                            python_split(self.as_string(), separator, max_splits, from_right));
  std::vector<Value> items(pieces.begin(), pieces.end());
  return Value::list(std::move(items));
}

Result<Value> affix_method(const Value& self, Arguments arguments, std::string_view name, bool prefix) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values, bind_arguments(name, std::move(arguments), {{"affix", {}}}));
  std::vector<Value> candidates;
  if (values[0].is_tuple()) {
    candidates = values[0].as_list().items;
  } else {
    candidates.push_back(values[0]);
  }
  const std::string& text = self.as_string();
  for (const Value& candidate : candidates) {
    if (!candidate.is_string()) {
      return invalid_argument(name, "() argument must be str or a tuple of str, not ", candidate.type_name());
    }
    const std::string& affix = candidate.as_string();
    if (affix.size() <= text.size() &&
        text.compare(prefix ? 0 : text.size() - affix.size(), affix.size(), affix) == 0) {
      return Value(true);
    }
  }
  return Value(false);
}

template <std::string (*Transform)(std::string_view)>
Result<Value> transform_method(const Value& self, Arguments arguments, std::string_view name) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values, bind_arguments(name, std::move(arguments), {}));
  return Value(Transform(self.as_string()));
}

template <bool (*Predicate)(std::string_view)>
Result<Value> predicate_method(const Value& self, Arguments arguments, std::string_view name) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values, bind_arguments(name, std::move(arguments), {}));
  return Value(Predicate(self.as_string()));
}

Result<Value> string_method(const Interpreter& interpreter, const Value& self, std::string_view name,
                            Arguments arguments) {
  if (name == "strip") {
    return strip_method(self, std::move(arguments), name, StripSide::kBoth);
  }
  if (name == "lstrip") {
    return strip_method(self, std::move(arguments), name, StripSide::kLeft);
  }
  if (name == "rstrip") {
    return strip_method(self, std::move(arguments), name, StripSide::kRight);
  }
  if (name == "split" || name == "rsplit") {
    return split_method(self, std::move(arguments), name, name == "rsplit");
  }
  if (name == "startswith" || name == "endswith") {
    return affix_method(self, std::move(arguments), name, name == "startswith");
  }
  if (name == "upper") {
    return transform_method<python_upper>(self, std::move(arguments), name);
  }
  if (name == "lower") {
    return transform_method<python_lower>(self, std::move(arguments), name);
  }
  if (name == "capitalize") {
    return transform_method<python_capitalize>(self, std::move(arguments), name);
  }
  if (name == "title") {
    return transform_method<python_title>(self, std::move(arguments), name);
  }
  if (name == "isalpha") {
    return predicate_method<python_is_alpha>(self, std::move(arguments), name);
  }
  if (name == "isdigit") {
    return predicate_method<python_is_digit>(self, std::move(arguments), name);
  }
  if (name == "isalnum") {
    return predicate_method<python_is_alnum>(self, std::move(arguments), name);
  }
  if (name == "islower") {
    return predicate_method<python_is_lower>(self, std::move(arguments), name);
  }
  if (name == "isupper") {
    return predicate_method<python_is_upper>(self, std::move(arguments), name);
  }
  if (name == "isspace") {
    return predicate_method<python_is_space_string>(self, std::move(arguments), name);
  }
  if (name == "splitlines") {
    STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values, bind_arguments(name, std::move(arguments), {}));
    std::vector<std::string> lines = python_splitlines(self.as_string());
    return Value::list(std::vector<Value>(lines.begin(), lines.end()));
  }
  if (name == "replace") {
    STATICLM_ASSIGN_OR_RETURN(
        std::vector<Value> values,
        bind_arguments(name, std::move(arguments), {{"old", {}}, {"new", {}}, {"count", Value(int64_t{-1})}}));
    STATICLM_ASSIGN_OR_RETURN(std::string old_text, required_string(values[0], name));
    STATICLM_ASSIGN_OR_RETURN(std::string new_text, required_string(values[1], name));
    STATICLM_ASSIGN_OR_RETURN(int64_t count, required_int(values[2], name));
    STATICLM_RETURN_IF_ERROR(
        interpreter.check_string_size(python_replace_size(self.as_string(), old_text, new_text, count)));
    return Value(python_replace(self.as_string(), old_text, new_text, count));
  }
  if (name == "find" || name == "rfind" || name == "count" || name == "index") {
    STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values, bind_arguments(name, std::move(arguments), {{"sub", {}}}));
    STATICLM_ASSIGN_OR_RETURN(std::string needle, required_string(values[0], name));
    if (name == "count") {
      return Value(python_count(self.as_string(), needle));
    }
    const int64_t at = python_find(self.as_string(), needle, name == "rfind");
    if (at < 0 && name == "index") {
      return invalid_argument("substring not found");
    }
    return Value(at);
  }
  if (name == "removeprefix" || name == "removesuffix") {
    STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values, bind_arguments(name, std::move(arguments), {{"affix", {}}}));
    STATICLM_ASSIGN_OR_RETURN(std::string affix, required_string(values[0], name));
    const std::string& text = self.as_string();
    if (name == "removeprefix" && text.compare(0, affix.size(), affix) == 0) {
      return Value(text.substr(affix.size()));
    }
    if (name == "removesuffix" && affix.size() <= text.size() &&
        text.compare(text.size() - affix.size(), affix.size(), affix) == 0) {
      return Value(text.substr(0, text.size() - affix.size()));
    }
    return self;
  }
  // join
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values, bind_arguments(name, std::move(arguments), {{"iterable", {}}}));
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> items, values[0].iterate());
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string()) {
      return invalid_argument("sequence item ", i, ": expected str instance, ", items[i].type_name(), " found");
    }
    out += (i ? self.as_string() : "") + items[i].as_string();
    STATICLM_RETURN_IF_ERROR(interpreter.check_string_size(out.size()));
  }
  return Value(std::move(out));
}

Result<Value> list_method(const Interpreter&, const Value& self, std::string_view name, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values, bind_arguments(name, std::move(arguments), {{"value", {}}}));
  const auto& items = self.as_list().items;
  if (name == "count") {
    return Value(static_cast<int64_t>(
        std::count_if(items.begin(), items.end(), [&](const Value& item) { return item.equals(values[0]); })));
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].equals(values[0])) {
      return Value(static_cast<int64_t>(i));
    }
  }
  return invalid_argument(values[0].repr(), " is not in list");
}

Result<Value> dict_method(const Interpreter&, const Value& self, std::string_view name, Arguments arguments) {
  const Dict& dict = self.as_dict();
  if (name == "get") {
    STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values, bind_arguments(name, std::move(arguments),
                                                                        {{"key", {}}, {"default", Value(NoneType{})}}));
    const Value* found = values[0].is_string() ? dict.find(values[0].as_string()) : nullptr;
    return found ? *found : values[1];
  }
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values, bind_arguments(name, std::move(arguments), {}));
  if (name == "copy") {
    return self;
  }
  std::vector<Value> out;
  out.reserve(dict.items.size());
  for (const auto& [key, value] : dict.items) {
    if (name == "keys") {
      out.emplace_back(key);
    } else if (name == "values") {
      out.push_back(value);
    } else {
      out.push_back(Value::list({Value(key), value}, /*is_tuple=*/true));
    }
  }
  return Value::list(std::move(out));
}

constexpr std::array<std::string_view, 27> kStringMethods = {
    "strip",      "lstrip", "rstrip",  "split",   "rsplit",  "startswith", "endswith",     "upper",        "lower",
    "capitalize", "title",  "isalpha", "isdigit", "isalnum", "islower",    "isupper",      "isspace",      "splitlines",
    "replace",    "find",   "rfind",   "count",   "index",   "join",       "removeprefix", "removesuffix", "format"};
constexpr std::array<std::string_view, 2> kListMethods = {"count", "index"};
constexpr std::array<std::string_view, 8> kListMutators = {"append", "extend",  "insert", "pop",
                                                           "remove", "reverse", "sort",   "clear"};
constexpr std::array<std::string_view, 5> kDictMethods = {"get", "items", "keys", "values", "copy"};
constexpr std::array<std::string_view, 5> kDictMutators = {"pop", "popitem", "setdefault", "update", "clear"};

template <size_t N>
bool listed(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

using BoundMethod = Result<Value> (*)(const Interpreter&, const Value&, std::string_view, Arguments);

Value bind(const Value& self, std::string_view name, BoundMethod method) {
  std::string method_name(name);
  return Value::callable(self.type_name() + "." + method_name,
                         [self, method_name, method](Interpreter& interpreter, Arguments arguments) {
                           return method(interpreter, self, method_name, std::move(arguments));
                         });
}

// str.format with plain fields: "{}", "{0}", "{name}", and "{{" / "}}"; a format spec or a
// conversion is refused rather than ignored.
Result<Value> format_method(const Interpreter& interpreter, const Value& self, std::string_view, Arguments arguments) {
  const std::string& pattern = self.as_string();
  std::string out;
  size_t next_automatic = 0;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if ((c == '{' || c == '}') && i + 1 < pattern.size() && pattern[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c == '}') {
      return invalid_argument("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    const size_t close = pattern.find('}', i);
    if (close == std::string::npos) {
      return invalid_argument("Single '{' encountered in format string");
    }
    const std::string field = pattern.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!.[") != std::string::npos) {
      return unimplemented("str.format() field '{", field,
                           "}': format specs and conversions are not supported in chat templates");
    }
    const Value* value = nullptr;
    if (field.empty() || field.find_first_not_of("0123456789") == std::string::npos) {
      const size_t index = field.empty() ? next_automatic++ : static_cast<size_t>(std::stoul(field.substr(0, 9)));
      if (index >= arguments.positional.size()) {
        return invalid_argument("Replacement index ", index, " out of range for positional args tuple");
      }
      value = &arguments.positional[index];
    } else {
      for (const auto& [name, keyword_value] : arguments.keyword) {
        if (name == field) {
          value = &keyword_value;
        }
      }
      if (value == nullptr) {
        return invalid_argument("KeyError: '", field, "'");
      }
    }
    out += value->str();
    STATICLM_RETURN_IF_ERROR(interpreter.check_string_size(out.size()));
    i = close;
  }
  return Value(std::move(out));
}

}  // namespace

std::optional<Value> builtin_method(const Value& self, std::string_view name) {
  if (self.is_string() && listed(kStringMethods, name)) {
    return bind(self, name, name == "format" ? format_method : string_method);
  }
  if (self.is_list() && listed(kListMethods, name)) {
    return bind(self, name, list_method);
  }
  if (self.is_dict() && listed(kDictMethods, name)) {
    return bind(self, name, dict_method);
  }
  if ((self.is_list() && listed(kListMutators, name)) || (self.is_dict() && listed(kDictMutators, name))) {
    return Value(Undefined{str_cat("access to attribute '", name, "' of '", self.type_name(), "' object is unsafe.")});
  }
  return std::nullopt;
}

}  // namespace staticlm::jinja
