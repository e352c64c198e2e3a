// SPDX-License-Identifier: Apache-2.0
// Evaluation of each expression node. Errors that an operation raises here get the node's line
// and column; errors from sub-expressions already carry theirs.
#include "staticlm/chat/jinja/ast.h"
#include "staticlm/chat/jinja/builtins.h"
#include "staticlm/chat/jinja/interpreter.h"
#include "staticlm/chat/jinja/operations.h"

namespace staticlm::jinja {

Result<Arguments> CallArguments::evaluate(Interpreter& interpreter) const {
  Arguments arguments;
  for (const ExprPtr& expression : positional) {
    STATICLM_ASSIGN_OR_RETURN(Value value, expression->evaluate(interpreter));
    arguments.positional.push_back(std::move(value));
  }
  for (const auto& [name, expression] : keyword) {
    STATICLM_ASSIGN_OR_RETURN(Value value, expression->evaluate(interpreter));
    arguments.keyword.emplace_back(name, std::move(value));
  }
  return arguments;
}

Result<Value> LiteralExpr::evaluate(Interpreter&) const {
  return value;
}

Result<Value> NameExpr::evaluate(Interpreter& interpreter) const {
  return interpreter.lookup(name);
}

Result<Value> ListExpr::evaluate(Interpreter& interpreter) const {
  std::vector<Value> values;
  values.reserve(items.size());
  for (const ExprPtr& item : items) {
    STATICLM_ASSIGN_OR_RETURN(Value value, item->evaluate(interpreter));
    values.push_back(std::move(value));
  }
  return Value::list(std::move(values), is_tuple);
}

Result<Value> DictExpr::evaluate(Interpreter& interpreter) const {
  std::vector<std::pair<std::string, Value>> values;
  values.reserve(items.size());
  for (const auto& [key_expression, value_expression] : items) {
    STATICLM_ASSIGN_OR_RETURN(Value key, key_expression->evaluate(interpreter));
    if (!key.is_string()) {
      return key_expression->at.error(
          str_cat("dict keys in chat templates must be strings, found ", key.type_name(), " ", key.repr()));
    }
    STATICLM_ASSIGN_OR_RETURN(Value value, value_expression->evaluate(interpreter));
    bool replaced = false;
    for (auto& item : values) {
      if (item.first == key.as_string()) {  // a repeated key keeps its place and takes the new value
        item.second = value;
        replaced = true;
      }
    }
    if (!replaced) {
      values.emplace_back(key.as_string(), std::move(value));
    }
  }
  return Value::dict(std::move(values));
}

Result<Value> GetAttrExpr::evaluate(Interpreter& interpreter) const {
  STATICLM_ASSIGN_OR_RETURN(Value value, object->evaluate(interpreter));
  auto attribute = get_attribute(value, name);
  if (!attribute.ok()) {
    return at.locate(attribute.status());
  }
  return attribute;
}

Result<Value> GetItemExpr::evaluate(Interpreter& interpreter) const {
  STATICLM_ASSIGN_OR_RETURN(Value value, object->evaluate(interpreter));
  STATICLM_ASSIGN_OR_RETURN(Value key, index->evaluate(interpreter));
  auto item = get_item(value, key);
  if (!item.ok()) {
    return at.locate(item.status());
  }
  return item;
}

Result<Value> SliceExpr::evaluate(Interpreter& interpreter) const {
  STATICLM_ASSIGN_OR_RETURN(Value value, object->evaluate(interpreter));
  Value bounds[3];
  const Value* given[3] = {nullptr, nullptr, nullptr};
  const ExprPtr* expressions[3] = {&start, &stop, &step};
  for (int i = 0; i < 3; ++i) {
    if (*expressions[i]) {
      STATICLM_ASSIGN_OR_RETURN(bounds[i], (*expressions[i])->evaluate(interpreter));
      given[i] = &bounds[i];
    }
  }
  auto result = slice(value, given[0], given[1], given[2]);
  if (!result.ok()) {
    return at.locate(result.status());
  }
  return result;
}

Result<Value> CallExpr::evaluate(Interpreter& interpreter) const {
  STATICLM_ASSIGN_OR_RETURN(Value function, callee->evaluate(interpreter));
  if (function.is_undefined()) {
    return at.locate(undefined_error(function));
  }
  if (!function.is_callable()) {
    return at.error(str_cat("'", function.type_name(), "' object is not callable"));
  }
  STATICLM_ASSIGN_OR_RETURN(Arguments values, arguments.evaluate(interpreter));
  const Callable& callable = function.as_callable();
  auto result = callable.call(interpreter, std::move(values));
  if (!result.ok() && !callable.errors_have_location) {
    return at.locate(result.status());
  }
  return result;
}

Result<Value> FilterExpr::evaluate(Interpreter& interpreter) const {
  Value value;
  if (input) {
    STATICLM_ASSIGN_OR_RETURN(value, input->evaluate(interpreter));
  } else {
    value = interpreter.filter_input();
  }
  STATICLM_ASSIGN_OR_RETURN(Arguments values, arguments.evaluate(interpreter));
  auto result = apply_filter(interpreter, name, std::move(value), std::move(values));
  if (!result.ok()) {
    return at.locate(result.status());
  }
  return result;
}

Result<Value> TestExpr::evaluate(Interpreter& interpreter) const {
  STATICLM_ASSIGN_OR_RETURN(Value value, input->evaluate(interpreter));
  STATICLM_ASSIGN_OR_RETURN(Arguments values, arguments.evaluate(interpreter));
  auto result = apply_test(interpreter, name, value, std::move(values));
  if (!result.ok()) {
    return at.locate(result.status());
  }
  return Value(*result != negated);
}

Result<Value> UnaryExpr::evaluate(Interpreter& interpreter) const {
  STATICLM_ASSIGN_OR_RETURN(Value value, operand->evaluate(interpreter));
  if (op == "not") {
    return Value(!value.truthy());
  }
  if (value.is_undefined()) {
    return at.locate(undefined_error(value));
  }
  if (!value.is_number()) {
    return at.error(str_cat("bad operand type for unary ", op, ": '", value.type_name(), "'"));
  }
  if (op == "+") {
    return value.is_bool() ? Value(value.to_int()) : value;
  }
  if (value.is_float()) {
    return Value(-value.as_float());
  }
  const int64_t integer = value.to_int();
  if (integer == INT64_MIN) {
    return at.error("integer overflow in unary -");
  }
  return Value(-integer);
}

Result<Value> BinaryExpr::evaluate(Interpreter& interpreter) const {
  STATICLM_ASSIGN_OR_RETURN(Value lhs, left->evaluate(interpreter));
  if (op == "and") {
    return lhs.truthy() ? right->evaluate(interpreter) : Result<Value>(lhs);
  }
  if (op == "or") {
    return lhs.truthy() ? Result<Value>(lhs) : right->evaluate(interpreter);
  }
  STATICLM_ASSIGN_OR_RETURN(Value rhs, right->evaluate(interpreter));
  auto result = binary_operation(interpreter, op, lhs, rhs);
  if (!result.ok()) {
    return at.locate(result.status());
  }
  return result;
}

Result<Value> CompareExpr::evaluate(Interpreter& interpreter) const {
  STATICLM_ASSIGN_OR_RETURN(Value lhs, first->evaluate(interpreter));
  for (const auto& [op, expression] : rest) {
    STATICLM_ASSIGN_OR_RETURN(Value rhs, expression->evaluate(interpreter));
    auto holds = compare_values(op, lhs, rhs);
    if (!holds.ok()) {
      return expression->at.locate(holds.status());
    }
    if (!*holds) {
      return Value(false);
    }
    lhs = std::move(rhs);
  }
  return Value(true);
}

Result<Value> ConditionalExpr::evaluate(Interpreter& interpreter) const {
  STATICLM_ASSIGN_OR_RETURN(Value test, condition->evaluate(interpreter));
  if (test.truthy()) {
    return then_value->evaluate(interpreter);
  }
  if (else_value) {
    return else_value->evaluate(interpreter);
  }
  return Value(Undefined{
      str_cat("the inline if-expression on line ", at.line, " evaluated to false and no else section was defined.")});
}

}  // namespace staticlm::jinja
