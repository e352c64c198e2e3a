// SPDX-License-Identifier: Apache-2.0
// The pieces of the _staticlm extension module: each registers its names on the module. They
// convert between Python and the library and hold no policy of their own.
#pragma once

#include <string>

#include <pybind11/pybind11.h>

#include "staticlm/backends/api/backend.h"
#include "staticlm/options/option_value.h"

namespace staticlm::python {

void register_options(pybind11::module_& m);
void register_program(pybind11::module_& m);
void register_export(pybind11::module_& m);
void register_runner(pybind11::module_& m);

// The builtin backends (cpu, qnn), registered once.
const BackendRegistry& backend_registry();
// A Python dict of options as the library takes them untyped (bool, int, float, str, list of
// str); anything else raises OptionError naming the option.
OptionMap option_map(const pybind11::dict& options);
// The backend of a staticlm.Partitioner and the options it was made from.
const Backend* partitioner_backend(const pybind11::object& partitioner, OptionMap& options);

}  // namespace staticlm::python
