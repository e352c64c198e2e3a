// SPDX-License-Identifier: Apache-2.0
#include "staticlm/chat/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include <utf8proc.h>

#include "staticlm/core/utf8.h"

namespace staticlm::jinja {

const Value* Dict::find(std::string_view key) const {
  for (const auto& [name, value] : items) {
    if (name == key) {
      return &value;
    }
  }
  return nullptr;
}

Status Object::set_attribute(std::string_view name, Value) {
  return invalid_argument("cannot assign attribute '", name, "' of a '", type_name(), "' object");
}

Value Value::list(std::vector<Value> items, bool is_tuple) {
  int depth = 0;
  for (const Value& item : items) {
    depth = std::max(depth, item.depth());
  }
  return Value(std::make_shared<const List>(List{std::move(items), is_tuple, depth + 1}));
}

Value Value::dict(std::vector<std::pair<std::string, Value>> items) {
  int depth = 0;
  for (const auto& item : items) {
    depth = std::max(depth, item.second.depth());
  }
  return Value(std::make_shared<const Dict>(Dict{std::move(items), depth + 1}));
}

int Value::depth() const {
  if (is_list()) {
    return as_list().depth;
  }
  if (is_dict()) {
    return as_dict().depth;
  }
  return 0;
}

bool Value::contains_object() const {
  if (is_object()) {
    return true;
  }
  if (is_list()) {
    for (const Value& item : as_list().items) {
      if (item.contains_object()) {
        return true;
      }
    }
  }
  if (is_dict()) {
    for (const auto& item : as_dict().items) {
      if (item.second.contains_object()) {
        return true;
      }
    }
  }
  return false;
}

Value Value::callable(std::string name, std::function<Result<Value>(Interpreter&, Arguments)> call) {
  return Value(std::make_shared<const Callable>(Callable{std::move(name), std::move(call)}));
}

double Value::to_double() const {
  if (is_float()) {
    return as_float();
  }
  return static_cast<double>(to_int());
}

int64_t Value::to_int() const {
  if (is_bool()) {
    return as_bool() ? 1 : 0;
  }
  if (is_float()) {
    // Truncated like Python's int(), saturating where Python's integers would outgrow an int64
    // (a cast out of range is undefined behaviour); NaN has no integer and gives 0.
    const double d = as_float();
    if (std::isnan(d)) {
      return 0;
    }
    if (d >= 9223372036854775807.0) {
      return INT64_MAX;
    }
    return d <= -9223372036854775808.0 ? INT64_MIN : static_cast<int64_t>(d);
  }
  // Callers check is_number() first; anything else is 0 rather than an exception.
  return is_int() ? as_int() : 0;
}

bool Value::truthy() const {
  return std::visit(
      [](const auto& v) -> bool {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, Undefined> || std::is_same_v<T, NoneType>) {
          return false;
        } else if constexpr (std::is_same_v<T, bool>) {
          return v;
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return v != 0;
        } else if constexpr (std::is_same_v<T, double>) {
          return v != 0.0;
        } else if constexpr (std::is_same_v<T, std::string>) {
          return !v.empty();
        } else if constexpr (std::is_same_v<T, ListPtr> || std::is_same_v<T, DictPtr>) {
          return !v->items.empty();
        } else {
          return true;
        }
      },
      data_);
}

std::string Value::type_name() const {
  if (is_undefined()) {
    return "Undefined";
  }
  if (is_none()) {
    return "NoneType";
  }
  if (is_bool()) {
    return "bool";
  }
  if (is_int()) {
    return "int";
  }
  if (is_float()) {
    return "float";
  }
  if (is_string()) {
    return "str";
  }
  if (is_list()) {
    return is_tuple() ? "tuple" : "list";
  }
  if (is_dict()) {
    return "dict";
  }
  if (is_object()) {
    return std::string(as_object().type_name());
  }
  return "function";
}

std::string python_float_repr(double value) {
  if (std::isnan(value)) {
    return "nan";
  }
  if (std::isinf(value)) {
    return value < 0 ? "-inf" : "inf";
  }
  // The shortest round-trip digits in scientific form: "-1.2345e+02".
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  std::string_view text(buffer, static_cast<size_t>(end - buffer));
  std::string sign;
  if (!text.empty() && text.front() == '-') {
    sign = "-";
    text.remove_prefix(1);
  }
  const size_t e_pos = text.find('e');
  std::string digits;
  for (char c : text.substr(0, e_pos)) {
    if (c != '.') {
      digits.push_back(c);
    }
  }
  int exponent = 0;
  std::from_chars(text.data() + e_pos + 1 + (text[e_pos + 1] == '+' ? 1 : 0), text.data() + text.size(), exponent);
  if (exponent < -4 || exponent >= 16) {
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) {
      out += "." + digits.substr(1);
    }
    char exponent_text[16];
    std::snprintf(exponent_text, sizeof(exponent_text), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exponent_text;
  }
  if (exponent < 0) {
    return sign + "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  }
  const auto integer_digits = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= integer_digits) {
    return sign + digits + std::string(integer_digits - digits.size(), '0') + ".0";
  }
  return sign + digits.substr(0, integer_digits) + "." + digits.substr(integer_digits);
}

namespace {

// Python's str.isprintable() for one character: everything but the Other and Separator
// categories, ASCII space excepted.
bool python_printable(char32_t code_point) {
  if (code_point == U' ') {
    return true;
  }
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(code_point))) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP: return false;
    default: return true;
  }
}

void append_escape(std::string& out, char32_t code_point) {
  char buffer[16];
  if (code_point < 0x100) {
    std::snprintf(buffer, sizeof(buffer), "\\x%02x", static_cast<unsigned>(code_point));
  } else if (code_point < 0x10000) {
    std::snprintf(buffer, sizeof(buffer), "\\u%04x", static_cast<unsigned>(code_point));
  } else {
    std::snprintf(buffer, sizeof(buffer), "\\U%08x", static_cast<unsigned>(code_point));
  }
  out += buffer;
}

}  // namespace

std::string python_string_repr(std::string_view text) {
  const bool has_single = text.find('\'') != std::string_view::npos;
  const bool has_double = text.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  utf8_walk(text, [&](char32_t code_point, size_t pos, size_t length) {
    if (length == 0) {  // not UTF-8: show the byte
      append_escape(out, static_cast<unsigned char>(text[pos]));
    } else if (code_point == U'\\') {
      out += "\\\\";
    } else if (code_point == static_cast<char32_t>(quote)) {
      out += '\\';
      out += quote;
    } else if (code_point == U'\n') {
      out += "\\n";
    } else if (code_point == U'\r') {
      out += "\\r";
    } else if (code_point == U'\t') {
      out += "\\t";
    } else if (!python_printable(code_point)) {
      append_escape(out, code_point);
    } else {
      out.append(text.substr(pos, length));
    }
    return true;
  });
  out += quote;
  return out;
}

std::string Value::str() const {
  if (is_undefined()) {
    return "";
  }
  if (is_string()) {
    return as_string();
  }
  return repr();
}

std::string Value::repr() const {
  return std::visit(
      [this](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, Undefined>) {
          return "Undefined";
        } else if constexpr (std::is_same_v<T, NoneType>) {
          return "None";
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "True" : "False";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          return python_float_repr(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return python_string_repr(v);
        } else if constexpr (std::is_same_v<T, ListPtr>) {
          std::string out = v->is_tuple ? "(" : "[";
          for (size_t i = 0; i < v->items.size(); ++i) {
            out += (i ? ", " : "") + v->items[i].repr();
          }
          if (v->is_tuple && v->items.size() == 1) {
            out += ",";
          }
          return out + (v->is_tuple ? ")" : "]");
        } else if constexpr (std::is_same_v<T, DictPtr>) {
          std::string out = "{";
          for (size_t i = 0; i < v->items.size(); ++i) {
            out += (i ? ", " : "") + python_string_repr(v->items[i].first) + ": " + v->items[i].second.repr();
          }
          return out + "}";
        } else if constexpr (std::is_same_v<T, ObjectPtr>) {
          return v->repr();
        } else {
          (void)this;
          return "<function " + v->name + ">";
        }
      },
      data_);
}

bool Value::equals(const Value& other) const {
  if (is_number() && other.is_number()) {
    if (is_float() || other.is_float()) {
      return to_double() == other.to_double();
    }
    return to_int() == other.to_int();
  }
  if (data_.index() != other.data_.index()) {
    return false;
  }
  if (is_undefined() || is_none()) {
    return true;
  }
  if (is_string()) {
    return as_string() == other.as_string();
  }
  if (is_list()) {
    const List& a = as_list();
    const List& b = other.as_list();
    if (a.is_tuple != b.is_tuple || a.items.size() != b.items.size()) {
      return false;
    }
    for (size_t i = 0; i < a.items.size(); ++i) {
      if (!a.items[i].equals(b.items[i])) {
        return false;
      }
    }
    return true;
  }
  if (is_dict()) {
    const Dict& a = as_dict();
    const Dict& b = other.as_dict();
    if (a.items.size() != b.items.size()) {
      return false;
    }
    for (const auto& [key, value] : a.items) {
      const Value* found = b.find(key);
      if (found == nullptr || !value.equals(*found)) {
        return false;
      }
    }
    return true;
  }
  if (is_object()) {
    return &as_object() == &other.as_object();
  }
  return &as_callable() == &other.as_callable();
}

Result<int> Value::compare(const Value& a, const Value& b, std::string_view op) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      const double x = a.to_double();
      const double y = b.to_double();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    const int64_t x = a.to_int();
    const int64_t y = b.to_int();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    // Byte order of UTF-8 is code-point order, which is Python's string order.
    const int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const auto& x = a.as_list().items;
    const auto& y = b.as_list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (x[i].equals(y[i])) {
        continue;
      }
      return compare(x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  return invalid_argument("'", op, "' not supported between instances of '", a.type_name(), "' and '", b.type_name(),
                          "'");
}

Result<std::vector<Value>> Value::iterate() const {
  if (is_undefined()) {
    return std::vector<Value>{};
  }
  if (is_list()) {
    return as_list().items;
  }
  if (is_dict()) {
    std::vector<Value> keys;
    keys.reserve(as_dict().items.size());
    for (const auto& item : as_dict().items) {
      keys.emplace_back(item.first);
    }
    return keys;
  }
  if (is_string()) {
    std::vector<Value> characters;
    utf8_for_each_char(as_string(), [&](std::string_view piece) { characters.emplace_back(std::string(piece)); });
    return characters;
  }
  return invalid_argument("'", type_name(), "' object is not iterable");
}

Result<int64_t> Value::length() const {
  if (is_undefined()) {
    return int64_t{0};
  }
  if (is_string()) {
    int64_t count = 0;
    utf8_for_each_char(as_string(), [&](std::string_view) { ++count; });
    return count;
  }
  if (is_list()) {
    return static_cast<int64_t>(as_list().items.size());
  }
  if (is_dict()) {
    return static_cast<int64_t>(as_dict().items.size());
  }
  return invalid_argument("object of type '", type_name(), "' has no len()");
}

}  // namespace staticlm::jinja
