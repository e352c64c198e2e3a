// SPDX-License-Identifier: Apache-2.0
// The filters, tests, methods and global functions templates can call. They follow Jinja 3.1 as
// transformers configures it (its own tojson, raise_exception and strftime_now; loop controls;
// the immutable sandbox, which refuses every method that mutates a list or dict).
#pragma once

#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

#include "staticlm/chat/jinja/value.h"

namespace staticlm::jinja {

class Interpreter;

bool has_filter(std::string_view name);
bool has_test(std::string_view name);

// Fails (InvalidArgument) with the message Python would give for a bad argument or value.
Result<Value> apply_filter(Interpreter& interpreter, std::string_view name, Value input, Arguments arguments);
Result<bool> apply_test(Interpreter& interpreter, std::string_view name, const Value& input, Arguments arguments);

// The method `name` of a str, list or dict bound to `self`: a callable; for a method that
// mutates, an undefined whose use fails with the sandbox's message; nullopt when there is none.
std::optional<Value> builtin_method(const Value& self, std::string_view name);

// range, dict, namespace, raise_exception, strftime_now.
std::vector<std::pair<std::string, Value>> builtin_globals();

// One parameter of a builtin: required when it has no default.
struct Parameter {
  std::string_view name;
  std::optional<Value> default_value;
};

// Binds positional and keyword arguments to `parameters` in order, as Python does; fails
// (InvalidArgument) for too many arguments, an unknown or repeated keyword, a missing one.
Result<std::vector<Value>> bind_arguments(std::string_view function, Arguments arguments,
                                          std::initializer_list<Parameter> parameters);

// The error a use of an undefined value raises: "'x' is undefined".
Status undefined_error(const Value& value);

}  // namespace staticlm::jinja
