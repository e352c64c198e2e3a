// SPDX-License-Identifier: Apache-2.0
#include "staticlm/chat/jinja/operations.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>

#include "staticlm/chat/jinja/builtins.h"
#include "staticlm/chat/jinja/interpreter.h"
#include "staticlm/core/utf8.h"

namespace staticlm::jinja {
namespace {

Status unsupported_operands(std::string_view op, const Value& left, const Value& right) {
  if (left.is_string() && op == "+") {
    return invalid_argument("can only concatenate str (not \"", right.type_name(), "\") to str");
  }
  if (left.is_list() && op == "+") {
    return invalid_argument("can only concatenate ", left.type_name(), " (not \"", right.type_name(), "\") to ",
                            left.type_name());
  }
  return invalid_argument("unsupported operand type(s) for ", op, ": '", left.type_name(), "' and '", right.type_name(),
                          "'");
}

Result<Value> checked_int(bool overflow, int64_t value, std::string_view op) {
  if (overflow) {
    return invalid_argument("integer overflow in ", op, " (staticlm's template integers are 64-bit)");
  }
  return Value(value);
}

// Python's floor division and modulo: the quotient rounds toward negative infinity and the
// remainder takes the divisor's sign.
Result<Value> divide(std::string_view op, const Value& left, const Value& right) {
  if (left.is_float() || right.is_float() || op == "/") {
    const double a = left.to_double();
    const double b = right.to_double();
    if (b == 0.0) {
      return invalid_argument(op == "%" ? "float modulo" : "division by zero");
    }
    if (op == "/") {
      return Value(a / b);
    }
    if (op == "//") {
      return Value(std::floor(a / b));
    }
    double remainder = std::fmod(a, b);
    if (remainder != 0.0 && ((remainder < 0) != (b < 0))) {
      remainder += b;
    }
    return Value(remainder);
  }
  const int64_t a = left.to_int();
  const int64_t b = right.to_int();
  if (b == 0) {
    return invalid_argument("integer division or modulo by zero");
  }
  if (a == INT64_MIN && b == -1) {
    return invalid_argument("integer overflow in ", op);
  }
  int64_t quotient = a / b;
  int64_t remainder = a % b;
  if (remainder != 0 && ((remainder < 0) != (b < 0))) {
    --quotient;
    remainder += b;
  }
  return Value(op == "//" ? quotient : remainder);
}

Result<Value> power(const Value& left, const Value& right) {
  if (left.is_float() || right.is_float() || right.to_int() < 0) {
    const double result = std::pow(left.to_double(), right.to_double());
    if (left.to_double() == 0.0 && right.to_double() < 0) {
      return invalid_argument("0.0 cannot be raised to a negative power");
    }
    return Value(result);
  }
  int64_t base = left.to_int();
  int64_t exponent = right.to_int();
  int64_t result = 1;
  while (exponent > 0) {
    if ((exponent & 1) && __builtin_mul_overflow(result, base, &result)) {
      return checked_int(true, 0, "**");
    }
    exponent >>= 1;
    if (exponent > 0 && __builtin_mul_overflow(base, base, &base)) {
      return checked_int(true, 0, "**");
    }
  }
  return Value(result);
}

Result<Value> repeat(Interpreter& interpreter, const Value& sequence, int64_t times) {
  times = std::max<int64_t>(times, 0);
  if (sequence.is_string()) {
    const std::string& text = sequence.as_string();
    if (text.empty()) {
      return Value(std::string());  // '' * n, however large n is, without n turns of a loop
    }
    if (times > 0) {
      STATICLM_RETURN_IF_ERROR(
          interpreter.check_string_size(times > static_cast<int64_t>(interpreter.limits().max_output_bytes)
                                            ? SIZE_MAX
                                            : text.size() * static_cast<size_t>(times)));
    }
    std::string out;
    for (int64_t i = 0; i < times; ++i) {
      out += text;
    }
    return Value(std::move(out));
  }
  const auto& items = sequence.as_list().items;
  if (items.empty()) {
    return Value::list({}, sequence.is_tuple());
  }
  STATICLM_RETURN_IF_ERROR(interpreter.check_item_count(
      times > interpreter.limits().max_loop_iterations ? INT64_MAX : static_cast<int64_t>(items.size()) * times));
  std::vector<Value> out;
  for (int64_t i = 0; i < times; ++i) {
    out.insert(out.end(), items.begin(), items.end());
  }
  return Value::list(std::move(out), sequence.is_tuple());
}

std::vector<std::string_view> characters(std::string_view text) {
  std::vector<std::string_view> pieces;
  utf8_for_each_char(text, [&](std::string_view piece) { pieces.push_back(piece); });
  return pieces;
}

std::string object_description(const Value& object) {
  if (object.is_none()) {
    return "'None'";
  }
  return "'" + object.type_name() + " object'";
}

}  // namespace

Result<Value> binary_operation(Interpreter& interpreter, std::string_view op, const Value& left, const Value& right) {
  if (op == "~") {
    std::string text = left.str();
    const std::string right_text = right.str();
    STATICLM_RETURN_IF_ERROR(interpreter.check_string_size(text.size() + right_text.size()));
    return Value(text + right_text);
  }
  for (const Value* side : std::initializer_list<const Value*>{&left, &right}) {
    if (side->is_undefined()) {
      return undefined_error(*side);
    }
  }
  if (left.is_number() && right.is_number()) {
    const bool integers = !left.is_float() && !right.is_float();
    int64_t result = 0;
    bool overflow = false;
    if (op == "+") {
      if (!integers) {
        return Value(left.to_double() + right.to_double());
      }
      overflow = __builtin_add_overflow(left.to_int(), right.to_int(), &result);
      return checked_int(overflow, result, op);
    }
    if (op == "-") {
      if (!integers) {
        return Value(left.to_double() - right.to_double());
      }
      overflow = __builtin_sub_overflow(left.to_int(), right.to_int(), &result);
      return checked_int(overflow, result, op);
    }
    if (op == "*") {
      if (!integers) {
        return Value(left.to_double() * right.to_double());
      }
      overflow = __builtin_mul_overflow(left.to_int(), right.to_int(), &result);
      return checked_int(overflow, result, op);
    }
    if (op == "/" || op == "//" || op == "%") {
      return divide(op, left, right);
    }
    if (op == "**") {
      return power(left, right);
    }
  }
  if (op == "+" && left.is_string() && right.is_string()) {
    STATICLM_RETURN_IF_ERROR(interpreter.check_string_size(left.as_string().size() + right.as_string().size()));
    return Value(left.as_string() + right.as_string());
  }
  if (op == "+" && left.is_list() && right.is_list() && left.is_tuple() == right.is_tuple()) {
    const auto& a = left.as_list().items;
    const auto& b = right.as_list().items;
    STATICLM_RETURN_IF_ERROR(interpreter.check_item_count(static_cast<int64_t>(a.size() + b.size())));
    std::vector<Value> items(a);
    items.insert(items.end(), b.begin(), b.end());
    return Value::list(std::move(items), left.is_tuple());
  }
  if (op == "*") {
    if ((left.is_string() || left.is_list()) && (right.is_int() || right.is_bool())) {
      return repeat(interpreter, left, right.to_int());
    }
    if ((right.is_string() || right.is_list()) && (left.is_int() || left.is_bool())) {
      return repeat(interpreter, right, left.to_int());
    }
  }
  if (op == "%" && left.is_string()) {
    Arguments arguments;
    if (right.is_tuple()) {
      arguments.positional = right.as_list().items;
    } else {
      arguments.positional.push_back(right);
    }
    return apply_filter(interpreter, "format", left, std::move(arguments));
  }
  return unsupported_operands(op, left, right);
}

Result<Value> get_attribute(const Value& object, std::string_view name) {
  if (object.is_undefined()) {
    return undefined_error(object);
  }
  if (!name.empty() && name.front() == '_') {
    return Value(
        Undefined{str_cat("access to attribute '", name, "' of '", object.type_name(), "' object is unsafe.")});
  }
  if (object.is_object()) {
    if (std::optional<Value> value = object.as_object().attribute(name)) {
      return *value;
    }
  } else if (std::optional<Value> method = builtin_method(object, name)) {
    return *method;
  } else if (object.is_dict()) {
    if (const Value* value = object.as_dict().find(name)) {
      return *value;
    }
  }
  return Value(Undefined{str_cat(object_description(object), " has no attribute '", name, "'")});
}

Result<Value> get_item(const Value& object, const Value& index) {
  if (object.is_undefined()) {
    return undefined_error(object);
  }
  if (object.is_dict() && index.is_string()) {
    if (const Value* value = object.as_dict().find(index.as_string())) {
      return *value;
    }
  } else if ((object.is_list() || object.is_string()) && (index.is_int() || index.is_bool())) {
    int64_t position = index.to_int();
    if (object.is_list()) {
      const auto size = static_cast<int64_t>(object.as_list().items.size());
      position += position < 0 ? size : 0;
      if (position >= 0 && position < size) {
        return object.as_list().items[static_cast<size_t>(position)];
      }
    } else {
      const std::vector<std::string_view> pieces = characters(object.as_string());
      const auto size = static_cast<int64_t>(pieces.size());
      position += position < 0 ? size : 0;
      if (position >= 0 && position < size) {
        return Value(std::string(pieces[static_cast<size_t>(position)]));
      }
    }
  } else if (object.is_object() && index.is_string()) {
    if (std::optional<Value> value = object.as_object().attribute(index.as_string())) {
      return *value;
    }
  }
  if (index.is_string()) {
    return get_attribute(object, index.as_string());
  }
  return Value(Undefined{str_cat(object_description(object), " has no element ", index.repr())});
}

namespace {

// Python's slice.indices(length) and the positions it selects.
Result<std::vector<size_t>> slice_positions(int64_t length, const Value* start, const Value* stop, const Value* step) {
  auto integer = [](const Value* bound, std::string_view what) -> Result<std::optional<int64_t>> {
    if (bound == nullptr || bound->is_none()) {
      return std::optional<int64_t>();
    }
    if (!bound->is_int() && !bound->is_bool()) {
      return invalid_argument("slice ", what, " must be an integer or None, found ", bound->type_name());
    }
    return std::optional<int64_t>(bound->to_int());
  };
  STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> first, integer(start, "start"));
  STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> last, integer(stop, "stop"));
  STATICLM_ASSIGN_OR_RETURN(std::optional<int64_t> stride, integer(step, "step"));
  const int64_t by = stride.value_or(1);
  if (by == 0) {
    return invalid_argument("slice step cannot be zero");
  }
  auto clamp = [&](std::optional<int64_t> bound, int64_t fallback) {
    if (!bound) {
      return fallback;
    }
    int64_t value = *bound < 0 ? *bound + length : *bound;
    if (by > 0) {
      return std::clamp<int64_t>(value, 0, length);
    }
    return std::clamp<int64_t>(value, -1, length - 1);
  };
  const int64_t begin = clamp(first, by > 0 ? 0 : length - 1);
  const int64_t end = clamp(last, by > 0 ? length : -1);
  std::vector<size_t> positions;
  for (int64_t i = begin; by > 0 ? i < end : i > end; i += by) {
    positions.push_back(static_cast<size_t>(i));
  }
  return positions;
}

}  // namespace

Result<Value> slice(const Value& object, const Value* start, const Value* stop, const Value* step) {
  if (object.is_undefined()) {
    return undefined_error(object);
  }
  if (object.is_list()) {
    const auto& items = object.as_list().items;
    STATICLM_ASSIGN_OR_RETURN(std::vector<size_t> positions,
                              slice_positions(static_cast<int64_t>(items.size()), start, stop, step));
    std::vector<Value> out;
    out.reserve(positions.size());
    for (size_t i : positions) {
      out.push_back(items[i]);
    }
    return Value::list(std::move(out), object.is_tuple());
  }
  if (object.is_string()) {
    const std::vector<std::string_view> pieces = characters(object.as_string());
    STATICLM_ASSIGN_OR_RETURN(std::vector<size_t> positions,
                              slice_positions(static_cast<int64_t>(pieces.size()), start, stop, step));
    std::string out;
    for (size_t i : positions) {
      out += pieces[i];
    }
    return Value(std::move(out));
  }
  return invalid_argument("'", object.type_name(), "' object is not subscriptable");
}

Result<bool> contains(const Value& container, const Value& item) {
  if (container.is_undefined()) {
    return false;
  }
  if (container.is_string()) {
    if (!item.is_string()) {
      return invalid_argument("'in <string>' requires string as left operand, not ", item.type_name());
    }
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_list()) {
    for (const Value& element : container.as_list().items) {
      if (element.equals(item)) {
        return true;
      }
    }
    return false;
  }
  if (container.is_dict()) {
    return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
  }
  return invalid_argument("argument of type '", container.type_name(), "' is not iterable");
}

Result<Value> get_attribute_path(const Value& object, std::string_view path) {
  Value current = object;
  size_t begin = 0;
  while (begin <= path.size()) {
    const size_t end = std::min(path.find('.', begin), path.size());
    const std::string_view part = path.substr(begin, end - begin);
    int64_t number = 0;
    const auto [stop, error] = std::from_chars(part.data(), part.data() + part.size(), number);
    const bool numeric = !part.empty() && error == std::errc() && stop == part.data() + part.size() && part[0] != '-';
    Value key = numeric ? Value(number) : Value(std::string(part));
    STATICLM_ASSIGN_OR_RETURN(current, get_item(current, key));
    begin = end + 1;
  }
  return current;
}

Result<bool> compare_values(std::string_view op, const Value& lhs, const Value& rhs) {
  if (op == "==") {
    return lhs.equals(rhs);
  }
  if (op == "!=") {
    return !lhs.equals(rhs);
  }
  if (op == "in" || op == "notin") {
    STATICLM_ASSIGN_OR_RETURN(bool found, contains(rhs, lhs));
    return found == (op == "in");
  }
  for (const Value* side : std::initializer_list<const Value*>{&lhs, &rhs}) {
    if (side->is_undefined()) {
      return undefined_error(*side);
    }
  }
  STATICLM_ASSIGN_OR_RETURN(int order, Value::compare(lhs, rhs, op));
  if (op == "<") {
    return order < 0;
  }
  if (op == "<=") {
    return order <= 0;
  }
  if (op == ">") {
    return order > 0;
  }
  return order >= 0;
}

}  // namespace staticlm::jinja
