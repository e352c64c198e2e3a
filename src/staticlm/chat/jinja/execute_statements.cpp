// SPDX-License-Identifier: Apache-2.0
// Execution of each statement node: writing output, branching, loops with Jinja's scoping, and
// macros as callables that close over the scope they were defined in.
#include "staticlm/chat/jinja/ast.h"
#include "staticlm/chat/jinja/builtins.h"
#include "staticlm/chat/jinja/interpreter.h"
#include "staticlm/chat/jinja/objects.h"

namespace staticlm::jinja {
namespace {

// Binds `value` to the target's names in the current scope, unpacking where the target lists
// several names.
Status bind_target(Interpreter& interpreter, const AssignTarget& target, const Value& value, Location at) {
  if (!target.namespace_name.empty()) {
    const Value object = interpreter.lookup(target.namespace_name);
    if (!object.is_object()) {
      return at.error(str_cat("cannot assign attribute on non-namespace object '", target.namespace_name, "' (",
                              object.type_name(), ")"));
    }
    return at.locate(object.as_object().set_attribute(target.names.front(), value));
  }
  if (!target.unpack) {
    return at.locate(interpreter.assign(target.names.front(), value));
  }
  if (value.is_undefined()) {
    return at.locate(undefined_error(value));
  }
  auto items = value.iterate();
  if (!items.ok()) {
    return at.error(str_cat("cannot unpack non-iterable ", value.type_name(), " object"));
  }
  if (items->size() != target.names.size()) {
    return at.error(
        items->size() < target.names.size()
            ? str_cat("not enough values to unpack (expected ", target.names.size(), ", got ", items->size(), ")")
            : str_cat("too many values to unpack (expected ", target.names.size(), ")"));
  }
  for (size_t i = 0; i < items->size(); ++i) {
    STATICLM_RETURN_IF_ERROR(at.locate(interpreter.assign(target.names[i], (*items)[i])));
  }
  return ok_status();
}

// Output written by `body`, as a string; a break or continue inside ends it early.
Result<std::string> capture(const Body& body, Interpreter& interpreter) {
  interpreter.begin_capture();
  auto flow = execute_body(body, interpreter);
  std::string text = interpreter.end_capture();
  if (!flow.ok()) {
    return std::move(flow).status();
  }
  return text;
}

}  // namespace

Result<Flow> TextStmt::execute(Interpreter& interpreter) const {
  STATICLM_RETURN_IF_ERROR(at.locate(interpreter.write(text)));
  return Flow::kNormal;
}

Result<Flow> OutputStmt::execute(Interpreter& interpreter) const {
  STATICLM_ASSIGN_OR_RETURN(Value value, expression->evaluate(interpreter));
  STATICLM_RETURN_IF_ERROR(at.locate(interpreter.write(value.str())));
  return Flow::kNormal;
}

Result<Flow> IfStmt::execute(Interpreter& interpreter) const {
  for (const auto& [condition, body] : branches) {
    STATICLM_ASSIGN_OR_RETURN(Value test, condition->evaluate(interpreter));
    if (test.truthy()) {
      return execute_body(body, interpreter);
    }
  }
  return execute_body(else_body, interpreter);
}

Result<Flow> ForStmt::execute(Interpreter& interpreter) const {
  STATICLM_ASSIGN_OR_RETURN(Value sequence, iterable->evaluate(interpreter));
  auto all_items = sequence.iterate();
  if (!all_items.ok()) {
    return iterable->at.locate(all_items.status());
  }
  auto items = std::make_shared<std::vector<Value>>();
  if (filter) {
    for (Value& item : *all_items) {
      STATICLM_RETURN_IF_ERROR(at.locate(interpreter.count_iterations()));
      Interpreter::ScopeGuard scope(interpreter, std::make_shared<Scope>(interpreter.scope()));
      STATICLM_RETURN_IF_ERROR(bind_target(interpreter, target, item, at));
      STATICLM_ASSIGN_OR_RETURN(Value keep, filter->evaluate(interpreter));
      if (keep.truthy()) {
        items->push_back(std::move(item));
      }
    }
  } else {
    *items = std::move(*all_items);
  }
  if (items->empty()) {
    STATICLM_ASSIGN_OR_RETURN(Flow flow, execute_body(else_body, interpreter));
    (void)flow;
    return Flow::kNormal;
  }
  std::shared_ptr<const std::vector<Value>> shared_items = items;
  for (size_t i = 0; i < shared_items->size(); ++i) {
    STATICLM_RETURN_IF_ERROR(at.locate(interpreter.count_iterations()));
    Interpreter::ScopeGuard scope(interpreter, std::make_shared<Scope>(interpreter.scope()));
    STATICLM_RETURN_IF_ERROR(bind_target(interpreter, target, (*shared_items)[i], at));
    STATICLM_RETURN_IF_ERROR(
        interpreter.assign("loop", Value(ObjectPtr(std::make_shared<LoopObject>(shared_items, i)))));
    STATICLM_ASSIGN_OR_RETURN(Flow flow, execute_body(body, interpreter));
    if (flow == Flow::kBreak) {
      break;
    }
  }
  return Flow::kNormal;
}

Result<Flow> SetStmt::execute(Interpreter& interpreter) const {
  STATICLM_ASSIGN_OR_RETURN(Value result, value->evaluate(interpreter));
  STATICLM_RETURN_IF_ERROR(bind_target(interpreter, target, result, at));
  return Flow::kNormal;
}

Result<Flow> SetBlockStmt::execute(Interpreter& interpreter) const {
  STATICLM_ASSIGN_OR_RETURN(std::string text, capture(body, interpreter));
  Value result(std::move(text));
  if (filter) {
    interpreter.set_filter_input(std::move(result));
    STATICLM_ASSIGN_OR_RETURN(result, filter->evaluate(interpreter));
  }
  STATICLM_RETURN_IF_ERROR(bind_target(interpreter, target, result, at));
  return Flow::kNormal;
}

Result<Flow> MacroStmt::execute(Interpreter& interpreter) const {
  const MacroStmt* macro = this;
  // Weak: the scope holds the macro, so a strong reference would be a cycle that outlives the
  // render. The scope ends with its loop iteration; a macro carried out of it (in a namespace)
  // can no longer be called.
  std::weak_ptr<Scope> definition_scope = interpreter.scope();
  auto call = [macro, definition_scope](Interpreter& caller, Arguments arguments) -> Result<Value> {
    std::shared_ptr<Scope> scope = definition_scope.lock();
    if (!scope) {
      return macro->at.error(str_cat("macro '", macro->name, "' is called after the loop iteration that defined it"));
    }
    return macro->call(caller, scope, std::move(arguments));
  };
  STATICLM_RETURN_IF_ERROR(
      interpreter.assign(name, Value(std::make_shared<const Callable>(Callable{name, std::move(call), true}))));
  return Flow::kNormal;
}

Result<Value> MacroStmt::call(Interpreter& interpreter, const std::shared_ptr<Scope>& definition_scope,
                              Arguments arguments) const {
  STATICLM_RETURN_IF_ERROR(at.locate(interpreter.enter_call()));
  struct LeaveCall {
    Interpreter& interpreter;
    ~LeaveCall() { interpreter.leave_call(); }
  } leave{interpreter};
  Interpreter::ScopeGuard scope(interpreter, std::make_shared<Scope>(definition_scope));
  std::vector<Value> extra;
  std::vector<bool> bound(parameters.size(), false);
  for (size_t i = 0; i < arguments.positional.size(); ++i) {
    if (i < parameters.size()) {
      STATICLM_RETURN_IF_ERROR(at.locate(interpreter.assign(parameters[i].name, arguments.positional[i])));
      bound[i] = true;
    } else {
      extra.push_back(arguments.positional[i]);
    }
  }
  for (auto& [keyword, value] : arguments.keyword) {
    size_t i = 0;
    while (i < parameters.size() && parameters[i].name != keyword) {
      ++i;
    }
    if (i == parameters.size()) {
      return at.error(str_cat("macro '", name, "' takes no keyword argument '", keyword, "'"));
    }
    if (bound[i]) {
      return at.error(str_cat("macro '", name, "' got multiple values for argument '", keyword, "'"));
    }
    STATICLM_RETURN_IF_ERROR(at.locate(interpreter.assign(parameters[i].name, std::move(value))));
    bound[i] = true;
  }
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (bound[i]) {
      continue;
    }
    if (parameters[i].default_value) {
      STATICLM_ASSIGN_OR_RETURN(Value value, parameters[i].default_value->evaluate(interpreter));
      STATICLM_RETURN_IF_ERROR(at.locate(interpreter.assign(parameters[i].name, std::move(value))));
    } else {
      STATICLM_RETURN_IF_ERROR(interpreter.assign(
          parameters[i].name, Value(Undefined{str_cat("parameter '", parameters[i].name, "' was not provided")})));
    }
  }
  STATICLM_RETURN_IF_ERROR(at.locate(interpreter.assign("varargs", Value::list(std::move(extra), /*is_tuple=*/true))));
  STATICLM_RETURN_IF_ERROR(interpreter.assign("kwargs", Value::dict({})));
  STATICLM_ASSIGN_OR_RETURN(std::string text, capture(body, interpreter));
  return Value(std::move(text));
}

Result<Flow> FilterBlockStmt::execute(Interpreter& interpreter) const {
  STATICLM_ASSIGN_OR_RETURN(std::string text, capture(body, interpreter));
  interpreter.set_filter_input(Value(std::move(text)));
  STATICLM_ASSIGN_OR_RETURN(Value result, filter->evaluate(interpreter));
  STATICLM_RETURN_IF_ERROR(at.locate(interpreter.write(result.str())));
  return Flow::kNormal;
}

Result<Flow> LoopControlStmt::execute(Interpreter&) const {
  return flow;
}

Result<Flow> GenerationStmt::execute(Interpreter& interpreter) const {
  return execute_body(body, interpreter);
}

}  // namespace staticlm::jinja
