// SPDX-License-Identifier: Apache-2.0
// Python's operators and Jinja's attribute and item lookup, shared by expression evaluation and
// the filters that take `attribute=`.
#pragma once

#include <string_view>

#include "staticlm/chat/jinja/value.h"

namespace staticlm::jinja {

class Interpreter;

// + - * / // % ** ~ with Python's types and results; fails (InvalidArgument) with Python's
// message for unsupported operand types, division by zero, integer overflow, or a result larger
// than the render limits allow.
Result<Value> binary_operation(Interpreter& interpreter, std::string_view op, const Value& left, const Value& right);

// `object.name`: a method or object attribute first, then the item; undefined (with the
// message its use will give) when neither exists.
Result<Value> get_attribute(const Value& object, std::string_view name);
// `object[index]`: the item first, then (for a string index) the attribute.
Result<Value> get_item(const Value& object, const Value& index);
// `object[start:stop:step]` of a list, tuple or string (code points); null bounds are absent.
Result<Value> slice(const Value& object, const Value* start, const Value* stop, const Value* step);
// `lhs op rhs` for == != < <= > >= and `in` / `notin`, with Python's rules (ordering across
// unrelated types and undefined operands fail).
Result<bool> compare_values(std::string_view op, const Value& lhs, const Value& rhs);
// `item in container`.
Result<bool> contains(const Value& container, const Value& item);
// A dotted attribute path ("function.name", "0") looked up item-first, as Jinja's attribute=
// arguments are.
Result<Value> get_attribute_path(const Value& object, std::string_view path);

}  // namespace staticlm::jinja
