// SPDX-License-Identifier: Apache-2.0
// Value: what a Jinja expression evaluates to, with Python's semantics where chat templates can
// observe them (str() and repr() text, truthiness, equality across int / float / bool, ordering,
// code-point indexing of strings). Lists and dicts are immutable and shared: the reference
// renderer (transformers' ImmutableSandboxedEnvironment) refuses every mutating method, so a
// template can never tell a copy from a share. The one mutable thing is an Object's attribute
// (namespace(), which is what `{% set ns.x = ... %}` exists for).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "staticlm/core/result.h"

namespace staticlm::jinja {

class Value;

// An undefined name or attribute. `what` says which, for the message a use of it produces:
// "'x' is undefined", "'dict object' has no attribute 'y'".
struct Undefined {
  std::string what;
};
struct NoneType {};

struct List {
  std::vector<Value> items;
  bool is_tuple = false;
  int depth = 1;  // 1 + the deepest item's depth (see Value::depth)
};

// Insertion-ordered, string keys (what JSON gives and what templates build).
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  int depth = 1;
  const Value* find(std::string_view key) const;
};

// A value with attributes: namespace(), the loop variable. Attribute lookup that finds nothing
// returns nullopt (the caller makes it undefined).
class Object {
 public:
  virtual ~Object() = default;
  virtual std::string_view type_name() const = 0;
  virtual std::optional<Value> attribute(std::string_view name) const = 0;
  // Fails (InvalidArgument) for objects whose attributes cannot be assigned.
  virtual Status set_attribute(std::string_view name, Value value);
  // Python's repr() of the object.
  virtual std::string repr() const = 0;
};

struct Arguments {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

class Interpreter;
struct Callable {
  std::string name;
  std::function<Result<Value>(Interpreter&, Arguments)> call;
  // A macro's errors already name their line; a builtin's get the caller's.
  bool errors_have_location = false;
};

using ListPtr = std::shared_ptr<const List>;
using DictPtr = std::shared_ptr<const Dict>;
using ObjectPtr = std::shared_ptr<Object>;
using CallablePtr = std::shared_ptr<const Callable>;

class Value {
 public:
  Value() : data_(Undefined{}) {}
  Value(NoneType none) : data_(none) {}                        // NOLINT(google-explicit-constructor)
  Value(Undefined undefined) : data_(std::move(undefined)) {}  // NOLINT(google-explicit-constructor)
  Value(bool b) : data_(b) {}                                  // NOLINT(google-explicit-constructor)
  Value(int64_t i) : data_(i) {}                               // NOLINT(google-explicit-constructor)
  Value(int i) : data_(int64_t{i}) {}                          // NOLINT(google-explicit-constructor)
  Value(double d) : data_(d) {}                                // NOLINT(google-explicit-constructor)
  Value(std::string s) : data_(std::move(s)) {}                // NOLINT(google-explicit-constructor)
  Value(const char* s) : data_(std::string(s)) {}              // NOLINT(google-explicit-constructor)
  Value(ListPtr list) : data_(std::move(list)) {}              // NOLINT(google-explicit-constructor)
  Value(DictPtr dict) : data_(std::move(dict)) {}              // NOLINT(google-explicit-constructor)
  Value(ObjectPtr object) : data_(std::move(object)) {}        // NOLINT(google-explicit-constructor)
  Value(CallablePtr callable) : data_(std::move(callable)) {}  // NOLINT(google-explicit-constructor)

  static Value list(std::vector<Value> items, bool is_tuple = false);
  static Value dict(std::vector<std::pair<std::string, Value>> items);
  static Value callable(std::string name, std::function<Result<Value>(Interpreter&, Arguments)> call);

  bool is_undefined() const { return std::holds_alternative<Undefined>(data_); }
  bool is_none() const { return std::holds_alternative<NoneType>(data_); }
  bool is_bool() const { return std::holds_alternative<bool>(data_); }
  bool is_int() const { return std::holds_alternative<int64_t>(data_); }
  bool is_float() const { return std::holds_alternative<double>(data_); }
  // int, float or bool: what Python's arithmetic accepts.
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return std::holds_alternative<std::string>(data_); }
  bool is_list() const { return std::holds_alternative<ListPtr>(data_); }
  bool is_tuple() const { return is_list() && as_list().is_tuple; }
  bool is_dict() const { return std::holds_alternative<DictPtr>(data_); }
  bool is_object() const { return std::holds_alternative<ObjectPtr>(data_); }
  bool is_callable() const { return std::holds_alternative<CallablePtr>(data_); }

  // Preconditions: the matching is_*().
  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return std::get<int64_t>(data_); }
  double as_float() const { return std::get<double>(data_); }
  const std::string& as_string() const { return std::get<std::string>(data_); }
  const List& as_list() const { return *std::get<ListPtr>(data_); }
  const Dict& as_dict() const { return *std::get<DictPtr>(data_); }
  Object& as_object() const { return *std::get<ObjectPtr>(data_); }
  const Callable& as_callable() const { return *std::get<CallablePtr>(data_); }
  const Undefined& as_undefined() const { return std::get<Undefined>(data_); }

  // A number as double / as int64 (bool counts as 0 or 1; a float truncates, saturating at the int64
  // range). Callers check is_number(): for anything else both give 0.
  double to_double() const;
  int64_t to_int() const;

  // How deeply lists and dicts nest in the value: 0 for a scalar, 1 for a flat list. Values are
  // built bottom-up and never change, so this is fixed at construction; the interpreter bounds
  // it, which bounds every recursive walk (repr, equality, destruction).
  int depth() const;
  // Whether a namespace (or another object) is inside the value, at any depth.
  bool contains_object() const;

  // Python's bool(): undefined, None, False, 0, 0.0, "", [] and {} are false.
  bool truthy() const;
  // Python's type name, as its error messages say it: "int", "str", "list", "dict", "NoneType".
  std::string type_name() const;
  // Python's str() and repr(); undefined is "" in str(), as Jinja's default Undefined prints.
  std::string str() const;
  std::string repr() const;
  // Python's ==: int, float and bool compare numerically; lists and dicts element-wise.
  bool equals(const Value& other) const;
  // Python's <: numbers with numbers, strings with strings (code points), lists element-wise.
  // Fails (InvalidArgument) for other pairs: "'<' not supported between 'str' and 'int'".
  static Result<int> compare(const Value& a, const Value& b, std::string_view op);

  // The items that iterating over the value yields: a list's items, a dict's keys, a string's
  // characters, nothing for undefined. Fails (InvalidArgument) for other values.
  Result<std::vector<Value>> iterate() const;
  // len(): code points of a string, items of a list or dict, 0 for undefined.
  Result<int64_t> length() const;

 private:
  std::variant<Undefined, NoneType, bool, int64_t, double, std::string, ListPtr, DictPtr, ObjectPtr, CallablePtr> data_;
};

// Python's repr() of a float (the shortest text that reads back to it, switching to exponent form
// below 1e-4 and from 1e16): 1.0, 0.1, 1e-05, 1e+16, inf, nan.
std::string python_float_repr(double value);
// Python's repr() of a str: quotes chosen as Python chooses them, escapes as Python writes them.
std::string python_string_repr(std::string_view text);

}  // namespace staticlm::jinja
