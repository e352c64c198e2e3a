// SPDX-License-Identifier: Apache-2.0
// Status: the outcome of an operation that can fail, as a code plus a message with context.
// Library code never throws across its boundary and never aborts on bad input: it returns a
// Status (or a Result<T>, see result.h) whose message names what was wrong and where.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "staticlm/core/str_cat.h"

namespace staticlm {

enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument,     // the caller's input (a file, an option, a tensor) is malformed
  kNotFound,            // a named thing (file, tensor, method, option) does not exist
  kOutOfRange,          // an index, offset or size lies outside what is allowed
  kFailedPrecondition,  // the system is not in a state where the call can succeed
  kUnimplemented,       // valid request that this build does not support
  kUnavailable,         // a needed resource (library, SDK, device) is not present
  kResourceExhausted,   // out of memory or another finite resource
  kDataLoss,            // a file is truncated or corrupt
  kInternal,            // a broken invariant inside staticlm (a bug)
};

std::string_view status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "InvalidArgument: message" (or "OK").
  std::string to_string() const;

  // Returns a copy whose message is "context: message"; an OK status stays OK.
  Status with_context(std::string_view context) const;

  // Explicitly discards a status where ignoring it is the intended behaviour.
  void ignore() const {}

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status ok_status() {
  return Status();
}

template <typename... Args>
Status invalid_argument(const Args&... args) {
  return Status(StatusCode::kInvalidArgument, str_cat(args...));
}
template <typename... Args>
Status not_found(const Args&... args) {
  return Status(StatusCode::kNotFound, str_cat(args...));
}
template <typename... Args>
Status out_of_range(const Args&... args) {
  return Status(StatusCode::kOutOfRange, str_cat(args...));
}
template <typename... Args>
Status failed_precondition(const Args&... args) {
  return Status(StatusCode::kFailedPrecondition, str_cat(args...));
}
template <typename... Args>
Status unimplemented(const Args&... args) {
  return Status(StatusCode::kUnimplemented, str_cat(args...));
}
template <typename... Args>
Status unavailable(const Args&... args) {
  return Status(StatusCode::kUnavailable, str_cat(args...));
}
template <typename... Args>
Status resource_exhausted(const Args&... args) {
  return Status(StatusCode::kResourceExhausted, str_cat(args...));
}
template <typename... Args>
Status data_loss(const Args&... args) {
  return Status(StatusCode::kDataLoss, str_cat(args...));
}
template <typename... Args>
Status internal_error(const Args&... args) {
  return Status(StatusCode::kInternal, str_cat(args...));
}

}  // namespace staticlm

// The only macros in the code base: return early on error.
#define STATICLM_CONCAT_INNER(a, b) a##b
#define STATICLM_CONCAT(a, b) STATICLM_CONCAT_INNER(a, b)

#define STATICLM_RETURN_IF_ERROR(expr)            \
  do {                                            \
    ::staticlm::Status staticlm_status_ = (expr); \
    if (!staticlm_status_.ok()) {                 \
      return staticlm_status_;                    \
    }                                             \
  } while (false)

#define STATICLM_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) {                                     \
    return std::move(tmp).status();                    \
  }                                                    \
  lhs = std::move(tmp).value()

#define STATICLM_ASSIGN_OR_RETURN(lhs, expr) \
  STATICLM_ASSIGN_OR_RETURN_IMPL(STATICLM_CONCAT(staticlm_result_, __LINE__), lhs, expr)
