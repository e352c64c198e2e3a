// SPDX-License-Identifier: Apache-2.0
// The state of one render: variable scopes, the output being written, and the limits that keep
// an untrusted template from running away (call depth, loop iterations, output size).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "staticlm/chat/jinja/ast.h"
#include "staticlm/chat/jinja/value.h"

namespace staticlm::jinja {

// Lists and dicts nested deeper than this cannot be bound to a name or a namespace attribute.
constexpr int kMaxValueDepth = 128;

struct RenderLimits {
  int max_call_depth = 32;                  // nested macro calls
  int64_t max_loop_iterations = 1'000'000;  // over the whole render; also caps range() and list sizes
  size_t max_output_bytes = 16u << 20;      // the output, and any one string built on the way
};

// Names bound in one scope. A for-loop iteration and a macro call each get a new scope whose
// parent is where the loop ran or the macro was defined, so a `set` inside never leaks out (what
// namespace() is for) and a macro sees its definition's names as they are when it is called.
class Scope {
 public:
  explicit Scope(std::shared_ptr<Scope> parent) : parent_(std::move(parent)) {}
  const Value* find(std::string_view name) const;
  void assign(const std::string& name, Value value) { names_[name] = std::move(value); }
  const std::shared_ptr<Scope>& parent() const { return parent_; }

 private:
  std::shared_ptr<Scope> parent_;
  std::unordered_map<std::string, Value> names_;
};

// Fails (ResourceExhausted) for a value nested deeper than kMaxValueDepth.
Status check_value_depth(const Value& value);

class Interpreter {
 public:
  Interpreter(const RenderLimits& limits, std::shared_ptr<Scope> root);

  // The value bound to `name` in the innermost scope that has it; undefined when none does.
  Value lookup(std::string_view name) const;
  // Binds `name` in the innermost scope. Fails (ResourceExhausted) for a value nested deeper
  // than kMaxValueDepth: only what is bound can grow across statements, so this bounds them all.
  Status assign(const std::string& name, Value value);
  const std::shared_ptr<Scope>& scope() const { return scope_; }

  // Makes `scope` current until the guard goes, then restores the previous one.
  class ScopeGuard {
   public:
    ScopeGuard(Interpreter& interpreter, std::shared_ptr<Scope> scope);
    ~ScopeGuard();
    ScopeGuard(const ScopeGuard&) = delete;
    ScopeGuard& operator=(const ScopeGuard&) = delete;

   private:
    Interpreter& interpreter_;
    std::shared_ptr<Scope> saved_;
  };

  // Appends to the current output; fails (ResourceExhausted) past max_output_bytes.
  Status write(std::string_view text);
  // Output written between begin_capture and end_capture goes to a string of its own (a set
  // block, a macro call, a filter block).
  void begin_capture();
  std::string end_capture();
  std::string take_output();

  // Fails (ResourceExhausted) once the render's loop iterations pass the limit.
  Status count_iterations(int64_t count = 1);
  // Fails (ResourceExhausted) when a string or list about to be built would pass the limits.
  Status check_string_size(size_t bytes) const;
  Status check_item_count(int64_t items) const;
  // Fails (ResourceExhausted) past max_call_depth; leave_call undoes a successful enter_call.
  Status enter_call();
  void leave_call() { --call_depth_; }

  // The value a filter chain with no input applies to (a `{% filter %}` or `{% set | f %}` body).
  const Value& filter_input() const { return filter_input_; }
  void set_filter_input(Value value) { filter_input_ = std::move(value); }

  const RenderLimits& limits() const { return limits_; }

 private:
  RenderLimits limits_;
  std::shared_ptr<Scope> scope_;
  std::vector<std::string> outputs_;
  int64_t iterations_ = 0;
  int call_depth_ = 0;
  Value filter_input_;
};

}  // namespace staticlm::jinja
