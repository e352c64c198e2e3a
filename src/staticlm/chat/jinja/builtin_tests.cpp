// SPDX-License-Identifier: Apache-2.0
// Jinja's tests (`x is defined`, `x is string`, `n is divisibleby 3`, ...).
#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "staticlm/chat/jinja/builtins.h"
#include "staticlm/chat/jinja/operations.h"
#include "staticlm/chat/jinja/python_strings.h"

namespace staticlm::jinja {
namespace {

using Test = Result<bool> (*)(const Value& value, Arguments& arguments);

Result<Value> single_argument(std::string_view test, Arguments& arguments) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values,
                            bind_arguments(test, std::move(arguments), {{"other", std::nullopt}}));
  return values[0];
}

Result<bool> no_arguments(std::string_view test, Arguments& arguments, bool result) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values, bind_arguments(test, std::move(arguments), {}));
  return result;
}

Result<bool> compare_test(std::string_view test, std::string_view op, const Value& value, Arguments& arguments) {
  STATICLM_ASSIGN_OR_RETURN(Value other, single_argument(test, arguments));
  return compare_values(op, value, other);
}

Result<bool> integer_test(std::string_view test, const Value& value, Arguments& arguments, bool odd) {
  STATICLM_RETURN_IF_ERROR(no_arguments(test, arguments, true).status());
  if (!value.is_int() && !value.is_bool()) {
    return invalid_argument("the '", test, "' test needs an integer, found ", value.type_name());
  }
  return (value.to_int() % 2 != 0) == odd;
}

const std::array<std::pair<std::string_view, Test>, 38> kTests = {{
    {"defined", [](const Value& v, Arguments& a) { return no_arguments("defined", a, !v.is_undefined()); }},
    {"undefined", [](const Value& v, Arguments& a) { return no_arguments("undefined", a, v.is_undefined()); }},
    {"none", [](const Value& v, Arguments& a) { return no_arguments("none", a, v.is_none()); }},
    {"boolean", [](const Value& v, Arguments& a) { return no_arguments("boolean", a, v.is_bool()); }},
    {"true", [](const Value& v, Arguments& a) { return no_arguments("true", a, v.is_bool() && v.as_bool()); }},
    {"false", [](const Value& v, Arguments& a) { return no_arguments("false", a, v.is_bool() && !v.as_bool()); }},
    {"integer", [](const Value& v, Arguments& a) { return no_arguments("integer", a, v.is_int()); }},
    {"float", [](const Value& v, Arguments& a) { return no_arguments("float", a, v.is_float()); }},
    {"number", [](const Value& v, Arguments& a) { return no_arguments("number", a, v.is_number()); }},
    {"string", [](const Value& v, Arguments& a) { return no_arguments("string", a, v.is_string()); }},
    {"mapping", [](const Value& v, Arguments& a) { return no_arguments("mapping", a, v.is_dict()); }},
    {"sequence",
     [](const Value& v, Arguments& a) {
       return no_arguments("sequence", a, v.is_string() || v.is_list() || v.is_dict() || v.is_undefined());
     }},
    {"iterable",
     [](const Value& v, Arguments& a) {
       return no_arguments("iterable", a, v.is_string() || v.is_list() || v.is_dict() || v.is_undefined());
     }},
    // Jinja's Undefined defines __call__ (to raise), so Python calls it callable.
    {"callable",
     [](const Value& v, Arguments& a) { return no_arguments("callable", a, v.is_callable() || v.is_undefined()); }},
    {"escaped", [](const Value&, Arguments& a) { return no_arguments("escaped", a, false); }},
    {"lower", [](const Value& v,
                 Arguments& a) { return no_arguments("lower", a, v.is_string() && python_is_lower(v.as_string())); }},
    {"upper", [](const Value& v,
                 Arguments& a) { return no_arguments("upper", a, v.is_string() && python_is_upper(v.as_string())); }},
    {"odd", [](const Value& v, Arguments& a) { return integer_test("odd", v, a, true); }},
    {"even", [](const Value& v, Arguments& a) { return integer_test("even", v, a, false); }},
    {"divisibleby",
     [](const Value& v, Arguments& a) -> Result<bool> {
       STATICLM_ASSIGN_OR_RETURN(Value divisor, single_argument("divisibleby", a));
       if (!v.is_number() || !divisor.is_number()) {
         return invalid_argument("the 'divisibleby' test needs numbers, found ", v.type_name(), " and ",
                                 divisor.type_name());
       }
       if (divisor.to_double() == 0.0) {
         return invalid_argument("integer division or modulo by zero");
       }
       if (v.is_float() || divisor.is_float()) {
         return std::fmod(v.to_double(), divisor.to_double()) == 0.0;
       }
       // x % -1 is 0 for every x; computing INT64_MIN % -1 would trap.
       return divisor.to_int() == -1 || v.to_int() % divisor.to_int() == 0;
     }},
    {"sameas",
     [](const Value& v, Arguments& a) -> Result<bool> {
       STATICLM_ASSIGN_OR_RETURN(Value other, single_argument("sameas", a));
       if (v.is_none() || v.is_bool() || other.is_none() || other.is_bool()) {
         return v.type_name() == other.type_name() && v.equals(other);
       }
       return v.equals(other) && v.type_name() == other.type_name();
     }},
    {"in",
     [](const Value& v, Arguments& a) -> Result<bool> {
       STATICLM_ASSIGN_OR_RETURN(Value container, single_argument("in", a));
       return contains(container, v);
     }},
    {"eq", [](const Value& v, Arguments& a) { return compare_test("eq", "==", v, a); }},
    {"equalto", [](const Value& v, Arguments& a) { return compare_test("equalto", "==", v, a); }},
    {"==", [](const Value& v, Arguments& a) { return compare_test("==", "==", v, a); }},
    {"ne", [](const Value& v, Arguments& a) { return compare_test("ne", "!=", v, a); }},
    {"!=", [](const Value& v, Arguments& a) { return compare_test("!=", "!=", v, a); }},
    {"lt", [](const Value& v, Arguments& a) { return compare_test("lt", "<", v, a); }},
    {"lessthan", [](const Value& v, Arguments& a) { return compare_test("lessthan", "<", v, a); }},
    {"<", [](const Value& v, Arguments& a) { return compare_test("<", "<", v, a); }},
    {"le", [](const Value& v, Arguments& a) { return compare_test("le", "<=", v, a); }},
    {"<=", [](const Value& v, Arguments& a) { return compare_test("<=", "<=", v, a); }},
    {"gt", [](const Value& v, Arguments& a) { return compare_test("gt", ">", v, a); }},
    {"greaterthan", [](const Value& v, Arguments& a) { return compare_test("greaterthan", ">", v, a); }},
    {">", [](const Value& v, Arguments& a) { return compare_test(">", ">", v, a); }},
    {"ge", [](const Value& v, Arguments& a) { return compare_test("ge", ">=", v, a); }},
    {">=", [](const Value& v, Arguments& a) { return compare_test(">=", ">=", v, a); }},
    {"filter", [](const Value& v,
                  Arguments& a) { return no_arguments("filter", a, v.is_string() && has_filter(v.as_string())); }},
}};

const Test* find_test(std::string_view name) {
  for (const auto& [test_name, test] : kTests) {
    if (test_name == name) {
      return &test;
    }
  }
  return nullptr;
}

}  // namespace

bool has_test(std::string_view name) {
  return find_test(name) != nullptr;
}

Result<bool> apply_test(Interpreter&, std::string_view name, const Value& input, Arguments arguments) {
  const Test* test = find_test(name);
  if (test == nullptr) {
    return invalid_argument("no test named '", name, "'");
  }
  return (*test)(input, arguments);
}

}  // namespace staticlm::jinja
