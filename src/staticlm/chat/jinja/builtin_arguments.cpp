// SPDX-License-Identifier: Apache-2.0
#include "staticlm/chat/jinja/builtins.h"

namespace staticlm::jinja {

Result<std::vector<Value>> bind_arguments(std::string_view function, Arguments arguments,
                                          std::initializer_list<Parameter> parameters) {
  if (arguments.positional.size() > parameters.size()) {
    return invalid_argument(function, "() takes at most ", parameters.size(), " arguments (",
                            arguments.positional.size(), " given)");
  }
  std::vector<std::optional<Value>> bound(parameters.size());
  for (size_t i = 0; i < arguments.positional.size(); ++i) {
    bound[i] = std::move(arguments.positional[i]);
  }
  for (auto& [name, value] : arguments.keyword) {
    size_t i = 0;
    for (const Parameter& parameter : parameters) {
      if (parameter.name == name) {
        break;
      }
      ++i;
    }
    if (i == parameters.size()) {
      return invalid_argument(function, "() got an unexpected keyword argument '", name, "'");
    }
    if (bound[i]) {
      return invalid_argument(function, "() got multiple values for argument '", name, "'");
    }
    bound[i] = std::move(value);
  }
  std::vector<Value> values;
  values.reserve(parameters.size());
  size_t i = 0;
  for (const Parameter& parameter : parameters) {
    if (bound[i]) {
      values.push_back(std::move(*bound[i]));
    } else if (parameter.default_value) {
      values.push_back(*parameter.default_value);
    } else {
      return invalid_argument(function, "() missing required argument '", parameter.name, "'");
    }
    ++i;
  }
  return values;
}

Status undefined_error(const Value& value) {
  const std::string& what = value.as_undefined().what;
  return invalid_argument(what.empty() ? "an undefined value is used" : what);
}

}  // namespace staticlm::jinja
