// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cmath>
#include <ctime>

#include "staticlm/chat/jinja/builtins.h"
#include "staticlm/chat/jinja/interpreter.h"
#include "staticlm/chat/jinja/objects.h"

namespace staticlm::jinja {
namespace {

// Jinja's sandbox refuses larger ranges; so do we, with its message.
constexpr int64_t kMaxRange = 100000;
__extension__ using Int128 = __int128;  // GCC and Clang have it; -Wpedantic asks for the marker

Result<Value> range(Interpreter& interpreter, Arguments arguments) {
  if (!arguments.keyword.empty() || arguments.positional.empty() || arguments.positional.size() > 3) {
    return invalid_argument("range() takes 1 to 3 positional arguments");
  }
  int64_t bounds[3] = {0, 0, 1};
  for (size_t i = 0; i < arguments.positional.size(); ++i) {
    const Value& bound = arguments.positional[i];
    if (!bound.is_int() && !bound.is_bool()) {
      return invalid_argument("'", bound.type_name(), "' object cannot be interpreted as an integer");
    }
    bounds[arguments.positional.size() == 1 ? 1 : i] = bound.to_int();
  }
  const auto [start, stop, step] = bounds;
  if (step == 0) {
    return invalid_argument("range() arg 3 must not be zero");
  }
  // Count in 128 bits: the span of two 64-bit bounds can overflow an int64.
  const Int128 span = static_cast<Int128>(stop) - start;
  const Int128 count128 = (span > 0) != (step > 0) || span == 0 ? 0 : (span + step + (step > 0 ? -1 : 1)) / step;
  if (count128 > kMaxRange) {
    return invalid_argument("Range too big. The sandbox blocks ranges larger than MAX_RANGE (", kMaxRange, ").");
  }
  const auto count = static_cast<int64_t>(count128);
  STATICLM_RETURN_IF_ERROR(interpreter.check_item_count(count));
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    // start + i * step lies between start and stop, so it fits an int64.
    items.emplace_back(static_cast<int64_t>(start + static_cast<Int128>(i) * step));
  }
  return Value::list(std::move(items));
}

Result<Value> make_namespace(Interpreter&, Arguments arguments) {
  std::vector<std::pair<std::string, Value>> attributes;
  if (arguments.positional.size() > 1 || (arguments.positional.size() == 1 && !arguments.positional[0].is_dict())) {
    return invalid_argument("namespace() takes keyword arguments and at most one dict");
  }
  if (!arguments.positional.empty()) {
    attributes = arguments.positional[0].as_dict().items;
  }
  auto object = std::make_shared<NamespaceObject>(std::vector<std::pair<std::string, Value>>{});
  for (auto& item : attributes) {
    STATICLM_RETURN_IF_ERROR(object->set_attribute(item.first, std::move(item.second)));
  }
  for (auto& item : arguments.keyword) {
    STATICLM_RETURN_IF_ERROR(object->set_attribute(item.first, std::move(item.second)));
  }
  return Value(ObjectPtr(std::move(object)));
}

Result<Value> make_dict(Interpreter&, Arguments arguments) {
  if (!arguments.positional.empty()) {
    return invalid_argument("dict() in chat templates takes keyword arguments only");
  }
  return Value::dict(std::move(arguments.keyword));
}

Result<Value> raise_exception(Interpreter&, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values,
                            bind_arguments("raise_exception", std::move(arguments), {{"message", std::nullopt}}));
  return invalid_argument("raised by the template: ", values[0].str());
}

Result<Value> strftime_now(Interpreter&, Arguments arguments) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<Value> values,
                            bind_arguments("strftime_now", std::move(arguments), {{"format", std::nullopt}}));
  if (!values[0].is_string()) {
    return invalid_argument("strftime_now() format must be a string, found ", values[0].type_name());
  }
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buffer[512];
  const size_t written = std::strftime(buffer, sizeof(buffer), values[0].as_string().c_str(), &local);
  if (written == 0 && !values[0].as_string().empty()) {
    return invalid_argument("strftime_now() format gives no text or more than ", sizeof(buffer), " bytes");
  }
  return Value(std::string(buffer, written));
}

}  // namespace

std::vector<std::pair<std::string, Value>> builtin_globals() {
  return {
      {"range", Value::callable("range", range)},
      {"namespace", Value::callable("namespace", make_namespace)},
      {"dict", Value::callable("dict", make_dict)},
      {"raise_exception", Value::callable("raise_exception", raise_exception)},
      {"strftime_now", Value::callable("strftime_now", strftime_now)},
  };
}

}  // namespace staticlm::jinja
