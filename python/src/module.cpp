// SPDX-License-Identifier: Apache-2.0
// The _staticlm extension module; staticlm/__init__.py re-exports its names.
#include <pybind11/pybind11.h>

#include "bindings.h"

PYBIND11_MODULE(_staticlm, m) {
  m.doc() = "staticlm: Hugging Face decoder-only LLMs as static-shape programs (C++ core).";
  staticlm::python::register_options(m);
  staticlm::python::register_program(m);
  staticlm::python::register_export(m);
  staticlm::python::register_runner(m);
}
