// SPDX-License-Identifier: Apache-2.0
// staticlm.backends(), staticlm.backend_options(name) and staticlm.Partitioner: the backends'
// option schemas as Python data, and Partitioner::from_options over a dict, routed by the same
// schema as `staticlm export --option` (no policy here: conversions only).
#include <map>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "staticlm/builtin/builtin_export.h"
#include "staticlm/core/str_cat.h"
#include "staticlm/partition/partitioner.h"

#include "bindings.h"
#include "status_errors.h"

namespace py = pybind11;

namespace staticlm::python {

const BackendRegistry& backend_registry() {
  static const BackendRegistry* registry = [] {
    auto* made = new BackendRegistry();
    ok_or_raise(register_builtin_backends(*made));
    return made;
  }();
  return *registry;
}

const Backend& find_backend(const std::string& name) {
  return *value_or_raise(backend_registry().get(name), ErrorKind::kOption);
}

py::object option_value(const OptionValue& value) {
  return std::visit([](const auto& v) -> py::object { return py::cast(v); }, value);
}

OptionMap option_map(const py::dict& options) {
  OptionMap map;
  for (const auto& [key, value] : options) {
    if (!py::isinstance<py::str>(key)) {
      raise_status(invalid_argument("options: keys must be option names (str), found ",
                                    std::string(py::str(py::type::of(key).attr("__name__")))),
                   ErrorKind::kOption);
    }
    const std::string name = key.cast<std::string>();
    RawOptionValue raw;
    raw.origin = "options";
    if (py::isinstance<py::bool_>(value)) {
      raw.form = RawOptionValue::Form::kBool;
      raw.value = value.cast<bool>();
    } else if (py::isinstance<py::int_>(value)) {
      raw.form = RawOptionValue::Form::kInt;
      raw.value = value.cast<int64_t>();
    } else if (py::isinstance<py::float_>(value)) {
      raw.form = RawOptionValue::Form::kFloat;
      raw.value = value.cast<double>();
    } else if (py::isinstance<py::str>(value)) {
      raw.form = RawOptionValue::Form::kString;
      raw.value = value.cast<std::string>();
    } else if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value) || py::isinstance<py::set>(value)) {
      std::vector<std::string> items;
      for (const py::handle item : value) {
        if (!py::isinstance<py::str>(item)) {
          raise_status(invalid_argument("option '", name, "': expected a list of strings, found an item of type ",
                                        std::string(py::str(py::type::of(item).attr("__name__")))),
                       ErrorKind::kOption);
        }
        items.push_back(item.cast<std::string>());
      }
      raw.form = RawOptionValue::Form::kStringList;
      raw.value = std::move(items);
    } else {
      raise_status(invalid_argument("option '", name, "': expected a bool, int, float, str or list of str, found ",
                                    std::string(py::str(py::type::of(value).attr("__name__")))),
                   ErrorKind::kOption);
    }
    map.emplace(name, std::move(raw));
  }
  return map;
}

namespace {

py::dict option_spec_dict(const OptionSpec& spec) {
  py::dict out;
  out["name"] = spec.name;
  out["type"] = std::string(option_type_name(spec.type));
  out["default"] = spec.default_value ? option_value(*spec.default_value) : py::none();
  out["required"] = spec.required;
  py::list allowed;
  for (const AllowedValue& value : spec.allowed) {
    py::dict entry;
    entry["name"] = value.name;
    entry["doc"] = value.doc;
    entry["min_sdk_version"] =
        value.min_sdk_version ? py::object(py::str(value.min_sdk_version->to_string())) : py::none();
    allowed.append(entry);
  }
  out["allowed"] = allowed;
  out["min"] = spec.min_value ? py::object(py::float_(*spec.min_value)) : py::none();
  out["max"] = spec.max_value ? py::object(py::float_(*spec.max_value)) : py::none();
  out["int_values"] = spec.int_values;
  out["route"] = spec.route;
  out["applies_to"] = spec.applies_to;
  out["min_sdk_version"] = spec.min_sdk_version ? py::object(py::str(spec.min_sdk_version->to_string())) : py::none();
  py::list constraints;
  for (const OptionConstraint& constraint : spec.constraints) {
    py::dict entry;
    entry["kind"] = constraint.kind == OptionConstraint::Kind::kRequires ? "requires" : "conflicts";
    entry["when"] = constraint.when_values;
    entry["other"] = constraint.other;
    entry["other_values"] = constraint.other_values;
    entry["why"] = constraint.why;
    constraints.append(entry);
  }
  out["constraints"] = constraints;
  out["doc"] = spec.doc;
  return out;
}

// A Partitioner made from options, with the options as given (export passes them on).
struct PyPartitioner {
  std::string backend;
  OptionMap given;
  Partitioner partitioner;

  py::dict settings() const {
    py::dict out;
    for (const EffectiveOption& option : partitioner.options().entries()) {
      out[py::str(option.name)] = option_value(option.value);
    }
    return out;
  }
  // Settings by compile-spec builder (every route but the partitioner's).
  py::dict compile_specs() const {
    std::map<std::string, py::dict> by_route;
    for (const EffectiveOption& option : partitioner.options().entries()) {
      if (option.route != kRoutePartitioner) {
        by_route[option.route][py::str(option.name)] = option_value(option.value);
      }
    }
    py::dict out;
    for (auto& [route, options] : by_route) {
      out[py::str(route)] = options;
    }
    return out;
  }
  py::dict partitioner_options() const {
    py::dict out;
    for (const EffectiveOption& option : partitioner.options().routed_to(kRoutePartitioner)) {
      out[py::str(option.name)] = option_value(option.value);
    }
    return out;
  }
  std::string repr() const {
    std::vector<std::string> parts;
    for (const EffectiveOption& option : partitioner.options().entries()) {
      parts.push_back(str_cat(option.name, "=", option_value_string(option.value), option.given ? " (given)" : ""));
    }
    return str_cat("Partitioner('", backend, "', ", join(parts, ", "), ")");
  }
};

}  // namespace

const Backend* partitioner_backend(const py::object& partitioner, OptionMap& options) {
  const auto& p = partitioner.cast<const PyPartitioner&>();
  options = p.given;
  return &p.partitioner.backend();
}

void register_options(py::module_& m) {
  m.def(
      "backends",
      [] {
        py::list out;
        for (const Backend* backend : backend_registry().all()) {
          py::dict entry;
          entry["name"] = std::string(backend->id());
          entry["summary"] = std::string(backend->summary());
          out.append(entry);
        }
        return out;
      },
      "The delegate backends this build has: [{'name', 'summary'}].");
  m.def(
      "backend_options",
      [](const std::string& name) {
        py::list out;
        for (const OptionSpec& spec : find_backend(name).option_schema().options) {
          out.append(option_spec_dict(spec));
        }
        return out;
      },
      py::arg("backend"),
      "Every option of a backend's schema: name, type, default, allowed values, range, route, the "
      "backend types it applies to, minimum SDK version, constraints and doc. OptionError for an "
      "unknown backend.");
  py::class_<PyPartitioner>(m, "Partitioner",
                            "A backend's options, routed and checked (Partitioner::from_options); "
                            "pass it to staticlm.export to delegate to that backend.")
      .def_static(
          "from_options",
          [](const std::string& backend, const py::dict& options) {
            const Backend& found = find_backend(backend);
            OptionMap given = option_map(options);
            Partitioner partitioner = value_or_raise(Partitioner::from_options(found, given), ErrorKind::kOption);
            return PyPartitioner{backend, std::move(given), std::move(partitioner)};
          },
          py::arg("backend"), py::arg("options") = py::dict(),
          "Routes every option through the backend's schema. OptionError for an unknown name (with a "
          "suggestion), a wrong type, a value out of range, an option of another backend type, "
          "conflicting options or an SDK too old, each with the C++ message.")
      .def_property_readonly(
          "backend", [](const PyPartitioner& p) { return p.backend; }, "The backend's name.")
      .def_property_readonly("settings", &PyPartitioner::settings,
                             "Every option in effect, given or defaulted: {name: value}.")
      .def_property_readonly("compile_specs", &PyPartitioner::compile_specs,
                             "The settings each compile-spec builder receives: {route: {name: value}}.")
      .def_property_readonly("partitioner_options", &PyPartitioner::partitioner_options,
                             "The settings the partitioner itself takes (skip sets, skip_mutable_buffer).")
      .def_property_readonly(
          "given",
          [](const PyPartitioner& p) {
            std::vector<std::string> names;
            for (const auto& [name, value] : p.given) names.push_back(name);
            return names;
          },
          "The names of the options given (the rest are defaults).")
      .def("__repr__", &PyPartitioner::repr);
}

}  // namespace staticlm::python
