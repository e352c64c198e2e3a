// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/status.h"

namespace staticlm {

std::string_view status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kOutOfRange: return "OutOfRange";
    case StatusCode::kFailedPrecondition: return "FailedPrecondition";
    case StatusCode::kUnimplemented: return "Unimplemented";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kResourceExhausted: return "ResourceExhausted";
    case StatusCode::kDataLoss: return "DataLoss";
    case StatusCode::kInternal: return "Internal";
  }
  return "Unknown";
}

std::string Status::to_string() const {
  if (ok()) {
    return "OK";
  }
  return str_cat(status_code_name(code_), ": ", message_);
}

Status Status::with_context(std::string_view context) const {
  if (ok()) {
    return *this;
  }
  return Status(code_, str_cat(context, ": ", message_));
}

std::string shape_string(std::span<const int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) {
      out += ",";
    }
    out += std::to_string(shape[i]);
  }
  out += "]";
  return out;
}

std::string join(std::span<const std::string> pieces, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i > 0) {
      out += separator;
    }
    out += pieces[i];
  }
  return out;
}

}  // namespace staticlm
