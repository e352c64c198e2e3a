// SPDX-License-Identifier: Apache-2.0
#include "staticlm/chat/jinja/interpreter.h"

namespace staticlm::jinja {

const Value* Scope::find(std::string_view name) const {
  for (const Scope* scope = this; scope != nullptr; scope = scope->parent_.get()) {
    const auto it = scope->names_.find(std::string(name));
    if (it != scope->names_.end()) {
      return &it->second;
    }
  }
  return nullptr;
}

Interpreter::Interpreter(const RenderLimits& limits, std::shared_ptr<Scope> root)
    : limits_(limits), scope_(std::move(root)), outputs_(1) {}

Value Interpreter::lookup(std::string_view name) const {
  if (const Value* value = scope_->find(name)) {
    return *value;
  }
  return Undefined{str_cat("'", name, "' is undefined")};
}

Status check_value_depth(const Value& value) {
  if (value.depth() > kMaxValueDepth) {
    return Status(StatusCode::kResourceExhausted,
                  str_cat("the template builds lists or dicts nested deeper than ", kMaxValueDepth, " levels"));
  }
  return ok_status();
}

Status Interpreter::assign(const std::string& name, Value value) {
  STATICLM_RETURN_IF_ERROR(check_value_depth(value));
  scope_->assign(name, std::move(value));
  return ok_status();
}

Interpreter::ScopeGuard::ScopeGuard(Interpreter& interpreter, std::shared_ptr<Scope> scope)
    : interpreter_(interpreter), saved_(std::move(interpreter.scope_)) {
  interpreter_.scope_ = std::move(scope);
}

Interpreter::ScopeGuard::~ScopeGuard() {
  interpreter_.scope_ = std::move(saved_);
}

Status Interpreter::write(std::string_view text) {
  std::string& out = outputs_.back();
  if (out.size() + text.size() > limits_.max_output_bytes) {
    return Status(StatusCode::kResourceExhausted,
                  str_cat("the template's output passes the limit of ", limits_.max_output_bytes, " bytes"));
  }
  out.append(text);
  return ok_status();
}

void Interpreter::begin_capture() {
  outputs_.emplace_back();
}

std::string Interpreter::end_capture() {
  std::string captured = std::move(outputs_.back());
  outputs_.pop_back();
  return captured;
}

std::string Interpreter::take_output() {
  return std::move(outputs_.front());
}

Status Interpreter::count_iterations(int64_t count) {
  iterations_ += count;
  if (iterations_ > limits_.max_loop_iterations) {
    return Status(StatusCode::kResourceExhausted,
                  str_cat("the template runs more than ", limits_.max_loop_iterations, " loop iterations"));
  }
  return ok_status();
}

Status Interpreter::check_string_size(size_t bytes) const {
  if (bytes > limits_.max_output_bytes) {
    return Status(StatusCode::kResourceExhausted, str_cat("the template builds a string of ", bytes,
                                                          " bytes, past the limit of ", limits_.max_output_bytes));
  }
  return ok_status();
}

Status Interpreter::check_item_count(int64_t items) const {
  if (items > limits_.max_loop_iterations) {
    return Status(StatusCode::kResourceExhausted, str_cat("the template builds a sequence of ", items,
                                                          " items, past the limit of ", limits_.max_loop_iterations));
  }
  return ok_status();
}

Status Interpreter::enter_call() {
  if (call_depth_ >= limits_.max_call_depth) {
    return Status(StatusCode::kResourceExhausted,
                  str_cat("macro calls nest deeper than ", limits_.max_call_depth, " levels"));
  }
  ++call_depth_;
  return ok_status();
}

}  // namespace staticlm::jinja
