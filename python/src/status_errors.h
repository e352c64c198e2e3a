// SPDX-License-Identifier: Apache-2.0
// C++ Status values as Python exceptions: staticlm.Error (a RuntimeError carrying the status code
// name) for every failure, staticlm.OptionError (also a ValueError, carrying the did-you-mean
// suggestion) for a refused option. Both are defined in staticlm/_errors.py; the message is the
// C++ message, unchanged.
#pragma once

#include <pybind11/pybind11.h>

#include "staticlm/core/result.h"

namespace staticlm::python {

enum class ErrorKind { kGeneral, kOption };

// Raises the status as a Python exception (never returns).
[[noreturn]] void raise_status(const Status& status, ErrorKind kind = ErrorKind::kGeneral);

// The value of a Result, or the raised exception.
template <typename T>
T value_or_raise(Result<T> result, ErrorKind kind = ErrorKind::kGeneral) {
  if (!result.ok()) {
    raise_status(result.status(), kind);
  }
  return std::move(result).value();
}

inline void ok_or_raise(const Status& status, ErrorKind kind = ErrorKind::kGeneral) {
  if (!status.ok()) {
    raise_status(status, kind);
  }
}

}  // namespace staticlm::python
