// SPDX-License-Identifier: Apache-2.0
#include "status_errors.h"

#include <string>

namespace py = pybind11;

namespace staticlm::python {

void raise_status(const Status& status, ErrorKind kind) {
  py::object errors = py::module_::import("staticlm._errors");
  py::object type = errors.attr(kind == ErrorKind::kOption ? "OptionError" : "Error");
  py::object error = type(status.message(), std::string(status_code_name(status.code())));
  PyErr_SetObject(type.ptr(), error.ptr());
  throw py::error_already_set();
}

}  // namespace staticlm::python
