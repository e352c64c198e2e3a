// SPDX-License-Identifier: Apache-2.0
#include "staticlm/chat/jinja/objects.h"

#include "staticlm/chat/jinja/interpreter.h"

namespace staticlm::jinja {

std::optional<Value> NamespaceObject::attribute(std::string_view name) const {
  if (const Value* value = attributes_.find(name)) {
    return *value;
  }
  return std::nullopt;
}

Status NamespaceObject::set_attribute(std::string_view name, Value value) {
  STATICLM_RETURN_IF_ERROR(check_value_depth(value));
  // With no namespace inside another, no value can reach itself: every structure is a tree.
  if (value.contains_object()) {
    return invalid_argument("cannot store a namespace or loop object in namespace attribute '", name, "'");
  }
  for (auto& [key, existing] : attributes_.items) {
    if (key == name) {
      existing = std::move(value);
      return ok_status();
    }
  }
  attributes_.items.emplace_back(std::string(name), std::move(value));
  return ok_status();
}

std::string NamespaceObject::repr() const {
  return "<Namespace " + Value::dict(attributes_.items).repr() + ">";
}

std::optional<Value> LoopObject::attribute(std::string_view name) const {
  const auto length = static_cast<int64_t>(items_->size());
  const auto index = static_cast<int64_t>(index_);
  if (name == "index") {
    return Value(index + 1);
  }
  if (name == "index0") {
    return Value(index);
  }
  if (name == "revindex") {
    return Value(length - index);
  }
  if (name == "revindex0") {
    return Value(length - index - 1);
  }
  if (name == "first") {
    return Value(index == 0);
  }
  if (name == "last") {
    return Value(index + 1 == length);
  }
  if (name == "length") {
    return Value(length);
  }
  if (name == "depth") {
    return Value(1);
  }
  if (name == "depth0") {
    return Value(0);
  }
  if (name == "previtem") {
    return index > 0 ? (*items_)[index_ - 1] : Value(Undefined{"there is no previous item"});
  }
  if (name == "nextitem") {
    return index + 1 < length ? (*items_)[index_ + 1] : Value(Undefined{"there is no next item"});
  }
  if (name == "cycle") {
    const size_t position = index_;
    return Value::callable("loop.cycle", [position](Interpreter&, Arguments arguments) -> Result<Value> {
      if (arguments.positional.empty() || !arguments.keyword.empty()) {
        return invalid_argument("loop.cycle() takes one or more positional arguments");
      }
      return arguments.positional[position % arguments.positional.size()];
    });
  }
  return std::nullopt;
}

std::string LoopObject::repr() const {
  return str_cat("<LoopContext ", index_ + 1, "/", items_->size(), ">");
}

}  // namespace staticlm::jinja
