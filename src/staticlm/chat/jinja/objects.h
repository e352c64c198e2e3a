// SPDX-License-Identifier: Apache-2.0
// The two objects templates see: namespace() (the one value a template can assign attributes
// of, which is how a loop carries state out of itself) and the `loop` variable of a for loop.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "staticlm/chat/jinja/value.h"

namespace staticlm::jinja {

class NamespaceObject final : public Object {
 public:
  explicit NamespaceObject(std::vector<std::pair<std::string, Value>> attributes)
      : attributes_{std::move(attributes)} {}
  std::string_view type_name() const override { return "Namespace"; }
  std::optional<Value> attribute(std::string_view name) const override;
  Status set_attribute(std::string_view name, Value value) override;
  std::string repr() const override;

 private:
  Dict attributes_;
};

class LoopObject final : public Object {
 public:
  LoopObject(std::shared_ptr<const std::vector<Value>> items, size_t index) : items_(std::move(items)), index_(index) {}
  std::string_view type_name() const override { return "LoopContext"; }
  std::optional<Value> attribute(std::string_view name) const override;
  std::string repr() const override;

 private:
  std::shared_ptr<const std::vector<Value>> items_;
  size_t index_;
};

}  // namespace staticlm::jinja
