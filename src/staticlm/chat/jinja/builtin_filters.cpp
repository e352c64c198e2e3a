// SPDX-License-Identifier: Apache-2.0
// Jinja's filters as chat templates use them, with Jinja 3.1's arguments and defaults, and
// transformers' tojson. Filters that Jinja implements as generators (map, select, reverse) give
// lists here: a template can only iterate, join or convert them, which gives the same text.
#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "staticlm/chat/jinja/builtins.h"
#include "staticlm/chat/jinja/interpreter.h"
#include "staticlm/chat/jinja/json_values.h"
#include "staticlm/chat/jinja/operations.h"
#include "staticlm/chat/jinja/python_strings.h"
#include "staticlm/core/utf8.h"

namespace staticlm::jinja {
namespace {

using Filter = Result<Value> (*)(Interpreter& interpreter, Value input, Arguments arguments);

Value none() {
  return Value(NoneType{});
}

Result<std::optional<std::string>> optional_attribute(const Value& value) {
  if (value.is_none()) {
    return std::optional<std::string>();
  }
  if (value.is_int()) {
    return std::optional<std::string>(std::to_string(value.as_int()));
  }
  if (!value.is_string()) {
    return invalid_argument("attribute must be a string, found ", value.type_name());
  }
  return std::optional<std::string>(value.as_string());
}

// The value a sort, unique, min or max compares: the attribute when given, lower-cased when
// comparing case-insensitively.
Result<Value> sort_key(const Value& item, const std::optional<std::string>& attribute, bool case_sensitive) {
  Value key = item;
  if (attribute) {
    STATICLM_ASSIGN_OR_RETURN(key, get_attribute_path(item, *attribute));
  }
  if (!case_sensitive && key.is_string()) {
    return Value(python_lower(key.as_string()));
  }
  return key;
}

// Stable sort of `items` by `keys`; fails when two keys cannot be compared.
Status sort_by_keys(std::vector<Value>& items, const std::vector<Value>& keys, bool reverse) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  Status failure;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (!failure.ok()) {
      return false;
    }
    auto c = Value::compare(keys[a], keys[b], "<");
    if (!c.ok()) {
      failure = c.status();
      return false;
    }
    return reverse ? *c > 0 : *c < 0;
  });
  STATICLM_RETURN_IF_ERROR(failure);
  std::vector<Value> sorted;
  sorted.reserve(items.size());
  for (size_t i : order) {
    sorted.push_back(std::move(items[i]));
  }
  items = std::move(sorted);
  return ok_status();
}

Result<Value> filter_default(Interpreter&, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(
      std::vector<Value> values,
      bind_arguments("default", std::move(arguments), {{"default_value", Value("")}, {"boolean", Value(false)}}));
  if (input.is_undefined() || (values[1].truthy() && !input.truthy())) {
    return values[0];
  }
  return input;
}

Result<Value> filter_length(Interpreter&, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values, bind_arguments("length", std::move(arguments), {}));
  STATICLM_ASSIGN_OR_RETURN(int64_t length, input.length());
  return Value(length);
}

Result<Value> filter_first_or_last(Value input, Arguments arguments, bool first) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values,
                            bind_arguments(first ? "first" : "last", std::move(arguments), {}));
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> items, input.iterate());
  if (items.empty()) {
    return Value(Undefined{first ? "No first item, sequence was empty." : "No last item, sequence was empty."});
  }
  return first ? items.front() : items.back();
}

Result<Value> filter_join(Interpreter& interpreter, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values,
                            bind_arguments("join", std::move(arguments), {{"d", Value("")}, {"attribute", none()}}));
  STATICLM_ASSIGN_OR_RETURN(std::optional<std::string> attribute, optional_attribute(values[1]));
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> items, input.iterate());
  const std::string separator = values[0].str();
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    Value item = items[i];
    if (attribute) {
      STATICLM_ASSIGN_OR_RETURN(item, get_attribute_path(item, *attribute));
    }
    if (i > 0) {
      out += separator;
    }
    out += item.str();
    STATICLM_RETURN_IF_ERROR(interpreter.check_string_size(out.size()));
  }
  return Value(std::move(out));
}

Result<Value> filter_list(Interpreter&, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values, bind_arguments("list", std::move(arguments), {}));
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> items, input.iterate());
  return Value::list(std::move(items));
}

Result<Value> filter_items(Interpreter&, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values, bind_arguments("items", std::move(arguments), {}));
  if (input.is_undefined()) {
    return Value::list({});
  }
  if (!input.is_dict()) {
    return invalid_argument("Can only get item pairs from a mapping.");
  }
  std::vector<Value> pairs;
  for (const auto& [key, value] : input.as_dict().items) {
    pairs.push_back(Value::list({Value(key), value}, /*is_tuple=*/true));
  }
  return Value::list(std::move(pairs));
}

Result<Value> filter_dictsort(Interpreter&, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(
      std::vector<Value> values,
      bind_arguments("dictsort", std::move(arguments),
                     {{"case_sensitive", Value(false)}, {"by", Value("key")}, {"reverse", Value(false)}}));
  if (!input.is_dict()) {
    return invalid_argument("dictsort needs a mapping, found ", input.type_name());
  }
  const std::string by = values[1].str();
  if (by != "key" && by != "value") {
    return invalid_argument("You can only sort by either 'key' or 'value'");
  }
  std::vector<Value> pairs;
  std::vector<Value> keys;
  for (const auto& [key, value] : input.as_dict().items) {
    pairs.push_back(Value::list({Value(key), value}, /*is_tuple=*/true));
    STATICLM_ASSIGN_OR_RETURN(Value sort_value,
                              sort_key(by == "key" ? Value(key) : value, std::nullopt, values[0].truthy()));
    keys.push_back(std::move(sort_value));
  }
  STATICLM_RETURN_IF_ERROR(sort_by_keys(pairs, keys, values[2].truthy()));
  return Value::list(std::move(pairs));
}

Result<Value> filter_sort(Interpreter&, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(
      std::vector<Value> values,
      bind_arguments("sort", std::move(arguments),
                     {{"reverse", Value(false)}, {"case_sensitive", Value(false)}, {"attribute", none()}}));
  STATICLM_ASSIGN_OR_RETURN(std::optional<std::string> attribute, optional_attribute(values[2]));
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> items, input.iterate());
  std::vector<Value> keys;
  for (const Value& item : items) {
    STATICLM_ASSIGN_OR_RETURN(Value key, sort_key(item, attribute, values[1].truthy()));
    keys.push_back(std::move(key));
  }
  STATICLM_RETURN_IF_ERROR(sort_by_keys(items, keys, values[0].truthy()));
  return Value::list(std::move(items));
}

Result<Value> filter_unique(Interpreter&, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(
      std::vector<Value> values,
      bind_arguments("unique", std::move(arguments), {{"case_sensitive", Value(false)}, {"attribute", none()}}));
  STATICLM_ASSIGN_OR_RETURN(std::optional<std::string> attribute, optional_attribute(values[1]));
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> items, input.iterate());
  std::vector<Value> out;
  std::vector<Value> seen;
  for (Value& item : items) {
    STATICLM_ASSIGN_OR_RETURN(Value key, sort_key(item, attribute, values[0].truthy()));
    if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return s.equals(key); })) {
      seen.push_back(std::move(key));
      out.push_back(std::move(item));
    }
  }
  return Value::list(std::move(out));
}

Result<Value> filter_min_max(Value input, Arguments arguments, bool maximum) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values,
                            bind_arguments(maximum ? "max" : "min", std::move(arguments),
                                           {{"case_sensitive", Value(false)}, {"attribute", none()}}));
  STATICLM_ASSIGN_OR_RETURN(std::optional<std::string> attribute, optional_attribute(values[1]));
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> items, input.iterate());
  if (items.empty()) {
    return Value(Undefined{"No aggregated item, sequence was empty."});
  }
  size_t best = 0;
  STATICLM_ASSIGN_OR_RETURN(Value best_key, sort_key(items[0], attribute, values[0].truthy()));
  for (size_t i = 1; i < items.size(); ++i) {
    STATICLM_ASSIGN_OR_RETURN(Value key, sort_key(items[i], attribute, values[0].truthy()));
    STATICLM_ASSIGN_OR_RETURN(int order, Value::compare(key, best_key, maximum ? ">" : "<"));
    if (maximum ? order > 0 : order < 0) {
      best = i;
      best_key = std::move(key);
    }
  }
  return items[best];
}

Result<Value> filter_sum(Interpreter& interpreter, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values,
                            bind_arguments("sum", std::move(arguments), {{"attribute", none()}, {"start", Value(0)}}));
  STATICLM_ASSIGN_OR_RETURN(std::optional<std::string> attribute, optional_attribute(values[0]));
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> items, input.iterate());
  Value total = values[1];
  for (const Value& item : items) {
    Value term = item;
    if (attribute) {
      STATICLM_ASSIGN_OR_RETURN(term, get_attribute_path(item, *attribute));
    }
    STATICLM_ASSIGN_OR_RETURN(total, binary_operation(interpreter, "+", total, term));
  }
  return total;
}

// map(attribute='x', default=...) or map('filter', arguments...).
Result<Value> filter_map(Interpreter& interpreter, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> items, input.iterate());
  std::vector<Value> out;
  out.reserve(items.size());
  const auto attribute = std::find_if(arguments.keyword.begin(), arguments.keyword.end(),
                                      [](const auto& k) { return k.first == "attribute"; });
  if (attribute != arguments.keyword.end()) {
    std::optional<Value> fallback;
    for (const auto& [name, value] : arguments.keyword) {
      if (name == "default") {
        fallback = value;
      } else if (name != "attribute") {
        return invalid_argument("map() got an unexpected keyword argument '", name, "'");
      }
    }
    if (!arguments.positional.empty()) {
      return invalid_argument("map() takes either a filter name or attribute=, not both");
    }
    STATICLM_ASSIGN_OR_RETURN(std::optional<std::string> path, optional_attribute(attribute->second));
    for (const Value& item : items) {
      STATICLM_ASSIGN_OR_RETURN(Value value, get_attribute_path(item, path.value_or("")));
      out.push_back(value.is_undefined() && fallback ? *fallback : std::move(value));
    }
    return Value::list(std::move(out));
  }
  if (arguments.positional.empty() || !arguments.positional[0].is_string()) {
    return invalid_argument("map() needs a filter name or attribute=");
  }
  const std::string name = arguments.positional[0].as_string();
  if (!has_filter(name)) {
    return invalid_argument("No filter named '", name, "'");
  }
  for (const Value& item : items) {
    Arguments rest{{arguments.positional.begin() + 1, arguments.positional.end()}, arguments.keyword};
    STATICLM_ASSIGN_OR_RETURN(Value value, apply_filter(interpreter, name, item, std::move(rest)));
    out.push_back(std::move(value));
  }
  return Value::list(std::move(out));
}

// select / reject / selectattr / rejectattr: items whose (attribute's) test result is `keep`.
Result<Value> filter_select(Interpreter& interpreter, Value input, Arguments arguments, bool by_attribute, bool keep) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> items, input.iterate());
  std::vector<Value> positional = std::move(arguments.positional);
  std::optional<std::string> attribute;
  if (by_attribute) {
    if (positional.empty()) {
      return invalid_argument("selectattr() and rejectattr() need an attribute name");
    }
    STATICLM_ASSIGN_OR_RETURN(attribute, optional_attribute(positional[0]));
    positional.erase(positional.begin());
  }
  std::optional<std::string> test;
  if (!positional.empty()) {
    if (!positional[0].is_string() || !has_test(positional[0].as_string())) {
      return invalid_argument("No test named ", positional[0].repr());
    }
    test = positional[0].as_string();
    positional.erase(positional.begin());
  }
  std::vector<Value> out;
  for (Value& item : items) {
    Value subject = item;
    if (attribute) {
      STATICLM_ASSIGN_OR_RETURN(subject, get_attribute_path(item, *attribute));
    }
    bool passed = subject.truthy();
    if (test) {
      STATICLM_ASSIGN_OR_RETURN(passed,
                                apply_test(interpreter, *test, subject, Arguments{positional, arguments.keyword}));
    }
    if (passed == keep) {
      out.push_back(std::move(item));
    }
  }
  return Value::list(std::move(out));
}

Result<Value> filter_reverse(Interpreter&, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values, bind_arguments("reverse", std::move(arguments), {}));
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> items, input.iterate());
  std::reverse(items.begin(), items.end());
  if (input.is_string()) {
    std::string out;
    for (const Value& c : items) {
      out += c.as_string();
    }
    return Value(std::move(out));
  }
  return Value::list(std::move(items));
}

template <std::string (*Transform)(std::string_view)>
Result<Value> string_filter(Interpreter&, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values, bind_arguments("filter", std::move(arguments), {}));
  return Value(Transform(input.str()));
}

std::string identity(std::string_view text) {
  return std::string(text);
}

// Jinja's title filter: words begin after '-', whitespace or an opening bracket.
std::string jinja_title(std::string_view text) {
  std::string out;
  bool word_start = true;
  utf8_walk(text, [&](char32_t code_point, size_t pos, size_t length) {
    const std::string_view piece = text.substr(pos, length == 0 ? 1 : length);
    const bool boundary = code_point == U'-' || code_point == U'(' || code_point == U'{' || code_point == U'[' ||
                          code_point == U'<' || python_is_space(code_point);
    if (boundary) {
      out.append(piece);
      word_start = true;
    } else {
      out += word_start ? python_upper(piece) : python_lower(piece);
      word_start = false;
    }
    return true;
  });
  return out;
}

std::string html_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

Result<Value> filter_trim(Interpreter&, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values,
                            bind_arguments("trim", std::move(arguments), {{"chars", none()}}));
  std::optional<std::string> characters;
  if (!values[0].is_none()) {
    characters = values[0].str();
  }
  return Value(python_strip(input.str(), characters, StripSide::kBoth));
}

Result<Value> filter_replace(Interpreter& interpreter, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values, bind_arguments("replace", std::move(arguments),
                                                                      {{"old", {}}, {"new", {}}, {"count", none()}}));
  const int64_t count = values[2].is_none() ? -1 : (values[2].is_number() ? values[2].to_int() : -1);
  const std::string text = input.str();
  const std::string old_text = values[0].str();
  const std::string new_text = values[1].str();
  STATICLM_RETURN_IF_ERROR(interpreter.check_string_size(python_replace_size(text, old_text, new_text, count)));
  return Value(python_replace(text, old_text, new_text, count));
}

Result<Value> filter_indent(Interpreter& interpreter, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values,
                            bind_arguments("indent", std::move(arguments),
                                           {{"width", Value(4)}, {"first", Value(false)}, {"blank", Value(false)}}));
  std::string indentation;
  if (values[0].is_string()) {
    indentation = values[0].as_string();
  } else if (values[0].is_int() || values[0].is_bool()) {
    indentation.assign(static_cast<size_t>(std::clamp<int64_t>(values[0].to_int(), 0, 4096)), ' ');
  } else {
    return invalid_argument("indent() width must be an integer or a string, found ", values[0].type_name());
  }
  std::vector<std::string> lines = python_splitlines(input.str() + "\n");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out += "\n";
      if (values[2].truthy() || !lines[i].empty()) {
        out += indentation;
      }
    }
    out += lines[i];
    STATICLM_RETURN_IF_ERROR(interpreter.check_string_size(out.size()));
  }
  if (values[1].truthy()) {
    out = indentation + out;
  }
  return Value(std::move(out));
}

Result<Value> filter_tojson(Interpreter& interpreter, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(
      std::vector<Value> values,
      bind_arguments(
          "tojson", std::move(arguments),
          {{"ensure_ascii", Value(false)}, {"indent", none()}, {"separators", none()}, {"sort_keys", Value(false)}}));
  JsonDumpOptions options;
  options.ensure_ascii = values[0].truthy();
  if (values[1].is_string()) {
    options.indent = values[1].as_string();
  } else if (values[1].is_int()) {
    options.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(values[1].as_int(), 0, 64)), ' ');
  } else if (!values[1].is_none()) {
    return invalid_argument("tojson() indent must be an integer, a string or None, found ", values[1].type_name());
  }
  if (!values[2].is_none()) {
    if (!values[2].is_list() || values[2].as_list().items.size() != 2 || !values[2].as_list().items[0].is_string() ||
        !values[2].as_list().items[1].is_string()) {
      return invalid_argument("tojson() separators must be a pair of strings");
    }
    options.item_separator = values[2].as_list().items[0].as_string();
    options.key_separator = values[2].as_list().items[1].as_string();
  }
  options.sort_keys = values[3].truthy();
  options.max_bytes = interpreter.limits().max_output_bytes;
  STATICLM_ASSIGN_OR_RETURN(std::string text, dump_json(input, options));
  STATICLM_RETURN_IF_ERROR(interpreter.check_string_size(text.size()));
  return Value(std::move(text));
}

// Python's float(str): surrounding whitespace, underscores between digits, inf and nan.
std::optional<double> parse_python_float(std::string_view text) {
  std::string s = python_strip(text, std::nullopt, StripSide::kBoth);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  const std::string lower = python_lower(s);
  const bool negative = !lower.empty() && lower[0] == '-';
  const std::string_view body = std::string_view(lower).substr(!lower.empty() && (lower[0] == '-' || lower[0] == '+'));
  if (body == "inf" || body == "infinity") {
    return negative ? -HUGE_VAL : HUGE_VAL;
  }
  if (body == "nan") {
    return std::nan("");
  }
  double value = 0;
  const char* begin = s.data() + (!s.empty() && s[0] == '+');
  const auto [end, error] = std::from_chars(begin, s.data() + s.size(), value);
  if (s.empty() || error != std::errc() || end != s.data() + s.size()) {
    return std::nullopt;
  }
  return value;
}

std::optional<int64_t> parse_python_int(std::string_view text, int base) {
  std::string s = python_strip(text, std::nullopt, StripSide::kBoth);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  size_t start = !s.empty() && (s[0] == '+' || s[0] == '-') ? 1 : 0;
  const bool negative = start == 1 && s[0] == '-';
  if (base == 16 && s.size() > start + 1 && s[start] == '0' && (s[start + 1] == 'x' || s[start + 1] == 'X')) {
    start += 2;
  }
  int64_t value = 0;
  const auto [end, error] = std::from_chars(s.data() + start, s.data() + s.size(), value, base);
  if (start >= s.size() || error != std::errc() || end != s.data() + s.size()) {
    return std::nullopt;
  }
  return negative ? -value : value;
}

Result<Value> filter_int(Interpreter&, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values,
                            bind_arguments("int", std::move(arguments), {{"default", Value(0)}, {"base", Value(10)}}));
  if (input.is_number()) {
    const double d = input.to_double();
    if (input.is_float() && (!std::isfinite(d) || std::fabs(d) > 9.2e18)) {
      return values[0];
    }
    return Value(input.to_int());
  }
  if (input.is_string()) {
    const int base = values[1].is_int() ? static_cast<int>(std::clamp<int64_t>(values[1].as_int(), 2, 36)) : 10;
    if (std::optional<int64_t> parsed = parse_python_int(input.as_string(), base)) {
      return Value(*parsed);
    }
    if (std::optional<double> parsed = parse_python_float(input.as_string());
        parsed && std::isfinite(*parsed) && std::fabs(*parsed) < 9.2e18) {
      return Value(static_cast<int64_t>(*parsed));
    }
  }
  return values[0];
}

Result<Value> filter_float(Interpreter&, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values,
                            bind_arguments("float", std::move(arguments), {{"default", Value(0.0)}}));
  if (input.is_number()) {
    return Value(input.to_double());
  }
  if (input.is_string()) {
    if (std::optional<double> parsed = parse_python_float(input.as_string())) {
      return Value(*parsed);
    }
  }
  return values[0];
}

Result<Value> filter_abs(Interpreter&, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values, bind_arguments("abs", std::move(arguments), {}));
  if (!input.is_number()) {
    return invalid_argument("bad operand type for abs(): '", input.type_name(), "'");
  }
  if (input.is_float()) {
    return Value(std::fabs(input.as_float()));
  }
  const int64_t value = input.to_int();
  if (value == INT64_MIN) {
    return invalid_argument("integer overflow in abs()");
  }
  return Value(value < 0 ? -value : value);
}

Result<Value> filter_round(Interpreter&, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(
      std::vector<Value> values,
      bind_arguments("round", std::move(arguments), {{"precision", Value(0)}, {"method", Value("common")}}));
  if (!input.is_number()) {
    return invalid_argument("round() needs a number, found ", input.type_name());
  }
  const std::string method = values[1].str();
  if (method != "common" && method != "ceil" && method != "floor") {
    return invalid_argument("method must be 'common', 'ceil' or 'floor'");
  }
  if (!values[0].is_int() && !values[0].is_bool()) {
    return invalid_argument("round() precision must be an integer, found ", values[0].type_name());
  }
  if (!input.is_float() && method == "common") {
    return Value(input.to_int());
  }
  const double scale = std::pow(10.0, static_cast<double>(std::clamp<int64_t>(values[0].to_int(), -300, 300)));
  const double scaled = input.to_double() * scale;
  const double rounded =
      method == "ceil" ? std::ceil(scaled) : (method == "floor" ? std::floor(scaled) : std::nearbyint(scaled));
  return Value(rounded / scale);
}

Result<Value> filter_attr(Interpreter&, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values, bind_arguments("attr", std::move(arguments), {{"name", {}}}));
  // Attributes only: unlike `.name`, attr() never falls back to a dict's item.
  const std::string name = values[0].str();
  if (input.is_object()) {
    if (std::optional<Value> value = input.as_object().attribute(name)) {
      return *value;
    }
  } else if (name.empty() || name.front() != '_') {
    if (std::optional<Value> method = builtin_method(input, name)) {
      return *method;
    }
  }
  return Value(Undefined{str_cat("'", input.type_name(), " object' has no attribute '", name, "'")});
}

Result<Value> filter_wordcount(Interpreter&, Value input, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values, bind_arguments("wordcount", std::move(arguments), {}));
  int64_t words = 0;
  bool in_word = false;
  utf8_walk(input.str(), [&](char32_t c, size_t, size_t) {
    const bool word = c == U'_' || (c < 0x80 ? std::isalnum(static_cast<int>(c)) != 0 : !python_is_space(c));
    words += word && !in_word;
    in_word = word;
    return true;
  });
  return Value(words);
}

// One printf conversion's flags, width and precision ("%-08.3d" -> left, zero, 8, 3).
struct PrintfSpec {
  bool left = false;
  bool zero = false;
  bool plus = false;
  bool space = false;
  bool alternate = false;
  size_t width = 0;
  std::optional<size_t> precision;
};

Result<PrintfSpec> parse_printf_spec(std::string_view spec, const Interpreter& interpreter) {
  PrintfSpec out;
  size_t i = 0;
  for (; i < spec.size() && std::string_view("-+ #0").find(spec[i]) != std::string_view::npos; ++i) {
    out.left |= spec[i] == '-';
    out.plus |= spec[i] == '+';
    out.space |= spec[i] == ' ';
    out.alternate |= spec[i] == '#';
    out.zero |= spec[i] == '0';
  }
  auto number = [&](size_t& value) -> Status {
    for (; i < spec.size() && spec[i] >= '0' && spec[i] <= '9'; ++i) {
      value = value * 10 + static_cast<size_t>(spec[i] - '0');
      // A width is a string of that many bytes: bound it before building anything.
      STATICLM_RETURN_IF_ERROR(interpreter.check_string_size(value));
    }
    return ok_status();
  };
  STATICLM_RETURN_IF_ERROR(number(out.width));
  if (i < spec.size() && spec[i] == '.') {
    ++i;
    size_t precision = 0;
    STATICLM_RETURN_IF_ERROR(number(precision));
    out.precision = precision;
  }
  if (i != spec.size()) {
    return invalid_argument("unsupported format specification '%", spec, "'");
  }
  return out;
}

// Pads to the width in code points, as Python does.
std::string pad(std::string text, const PrintfSpec& spec, size_t length) {
  if (length >= spec.width) {
    return text;
  }
  const std::string fill(spec.width - length, ' ');
  return spec.left ? text + fill : fill + text;
}

std::string format_printf_text(const std::string& text, const PrintfSpec& spec) {
  size_t kept_bytes = 0;
  size_t kept_characters = 0;
  utf8_walk(text, [&](char32_t, size_t pos, size_t length) {
    if (spec.precision && kept_characters == *spec.precision) {
      return false;
    }
    kept_bytes = pos + length;
    ++kept_characters;
    return true;
  });
  return pad(text.substr(0, kept_bytes), spec, kept_characters);
}

// %d %i %x %X %o with Python's results: a sign and the magnitude's digits (never two's
// complement), "0x" / "0o" for '#'.
std::string format_printf_integer(int64_t value, char conversion, const PrintfSpec& spec) {
  const bool negative = value < 0;
  uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  const unsigned base = conversion == 'x' || conversion == 'X' ? 16 : (conversion == 'o' ? 8 : 10);
  const char* digit_chars = conversion == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string digits;
  do {
    digits.insert(digits.begin(), digit_chars[magnitude % base]);
    magnitude /= base;
  } while (magnitude != 0);
  if (spec.precision && digits.size() < *spec.precision) {
    digits.insert(0, *spec.precision - digits.size(), '0');
  }
  std::string prefix = negative ? "-" : (spec.plus ? "+" : (spec.space ? " " : ""));
  if (spec.alternate && base != 10) {
    prefix += conversion == 'o' ? "0o" : (conversion == 'X' ? "0X" : "0x");
  }
  if (spec.zero && !spec.left && prefix.size() + digits.size() < spec.width) {
    digits.insert(0, spec.width - prefix.size() - digits.size(), '0');
  }
  std::string body = prefix + digits;
  const size_t length = body.size();
  return pad(std::move(body), spec, length);
}

std::string format_printf_float(double value, char conversion, std::string_view spec) {
  const std::string format = str_cat("%", spec, std::string(1, conversion));
  const int length = std::snprintf(nullptr, 0, format.c_str(), value);
  std::string out(static_cast<size_t>(std::max(length, 0)), '\0');
  std::snprintf(out.data(), out.size() + 1, format.c_str(), value);
  return out;
}

// printf-style formatting (the format filter and `%` on a string): %s %r %d %i %x %X %o %f %e %g
// %%, with flags, width and precision as Python applies them.
Result<Value> filter_format(Interpreter& interpreter, Value input, Arguments arguments) {
  if (!arguments.keyword.empty()) {
    return unimplemented("the format filter with keyword arguments is not supported in chat templates");
  }
  const std::string pattern = input.str();
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') {
      out += pattern[i];
      continue;
    }
    size_t end = i + 1;
    while (end < pattern.size() && std::string_view("-+ #0123456789.").find(pattern[end]) != std::string_view::npos) {
      ++end;
    }
    if (end >= pattern.size()) {
      return invalid_argument("incomplete format");
    }
    const char conversion = pattern[end];
    const std::string spec_text = pattern.substr(i + 1, end - i - 1);
    i = end;
    if (conversion == '%') {
      out += '%';
      continue;
    }
    if (next >= arguments.positional.size()) {
      return invalid_argument("not enough arguments for format string");
    }
    STATICLM_ASSIGN_OR_RETURN(PrintfSpec spec, parse_printf_spec(spec_text, interpreter));
    const Value& value = arguments.positional[next++];
    if (conversion == 's' || conversion == 'r') {
      out += format_printf_text(conversion == 's' ? value.str() : value.repr(), spec);
    } else if (conversion == 'd' || conversion == 'i' || conversion == 'x' || conversion == 'X' || conversion == 'o') {
      if (!value.is_number()) {
        return invalid_argument("%", std::string(1, conversion), " format: a real number is required, not ",
                                value.type_name());
      }
      out += format_printf_integer(value.to_int(), conversion, spec);
    } else if (std::string_view("feEgG").find(conversion) != std::string_view::npos) {
      if (!value.is_number()) {
        return invalid_argument("must be real number, not ", value.type_name());
      }
      // Width and precision are bounded above; %f of a huge number is at most ~310 digits more.
      out += format_printf_float(value.to_double(), conversion, spec_text);
    } else {
      return invalid_argument("unsupported format character '", std::string(1, conversion), "'");
    }
    STATICLM_RETURN_IF_ERROR(interpreter.check_string_size(out.size()));
  }
  if (next < arguments.positional.size()) {
    return invalid_argument("not all arguments converted during string formatting");
  }
  return Value(std::move(out));
}

const std::array<std::pair<std::string_view, Filter>, 40> kFilters = {{
    {"default", filter_default},
    {"d", filter_default},
    {"length", filter_length},
    {"count", filter_length},
    {"first",
     [](Interpreter&, Value v, Arguments a) { return filter_first_or_last(std::move(v), std::move(a), true); }},
    {"last",
     [](Interpreter&, Value v, Arguments a) { return filter_first_or_last(std::move(v), std::move(a), false); }},
    {"join", filter_join},
    {"list", filter_list},
    {"items", filter_items},
    {"dictsort", filter_dictsort},
    {"sort", filter_sort},
    {"unique", filter_unique},
    {"min", [](Interpreter&, Value v, Arguments a) { return filter_min_max(std::move(v), std::move(a), false); }},
    {"max", [](Interpreter&, Value v, Arguments a) { return filter_min_max(std::move(v), std::move(a), true); }},
    {"sum", filter_sum},
    {"map", filter_map},
    {"select",
     [](Interpreter& i, Value v, Arguments a) { return filter_select(i, std::move(v), std::move(a), false, true); }},
    {"reject",
     [](Interpreter& i, Value v, Arguments a) { return filter_select(i, std::move(v), std::move(a), false, false); }},
    {"selectattr",
     [](Interpreter& i, Value v, Arguments a) { return filter_select(i, std::move(v), std::move(a), true, true); }},
    {"rejectattr",
     [](Interpreter& i, Value v, Arguments a) { return filter_select(i, std::move(v), std::move(a), true, false); }},
    {"reverse", filter_reverse},
    {"upper", string_filter<python_upper>},
    {"lower", string_filter<python_lower>},
    {"capitalize", string_filter<python_capitalize>},
    {"title", string_filter<jinja_title>},
    {"string", string_filter<identity>},
    {"safe", string_filter<identity>},
    {"escape", string_filter<html_escape>},
    {"e", string_filter<html_escape>},
    {"trim", filter_trim},
    {"replace", filter_replace},
    {"indent", filter_indent},
    {"tojson", filter_tojson},
    {"int", filter_int},
    {"float", filter_float},
    {"abs", filter_abs},
    {"round", filter_round},
    {"attr", filter_attr},
    {"wordcount", filter_wordcount},
    {"format", filter_format},
}};

const Filter* find_filter(std::string_view name) {
  for (const auto& [filter_name, filter] : kFilters) {
    if (filter_name == name) {
      return &filter;
    }
  }
  return nullptr;
}

}  // namespace

bool has_filter(std::string_view name) {
  return find_filter(name) != nullptr;
}

Result<Value> apply_filter(Interpreter& interpreter, std::string_view name, Value input, Arguments arguments) {
  const Filter* filter = find_filter(name);
  if (filter == nullptr) {
    return invalid_argument("no filter named '", name, "'");
  }
  return (*filter)(interpreter, std::move(input), std::move(arguments));
}

}  // namespace staticlm::jinja
