// SPDX-License-Identifier: Apache-2.0
// staticlm.load_program / staticlm.Program: a program file loaded with this build's kernels and
// backend runtimes, its metadata and methods, and a method run over numpy arrays: inputs bound
// where they lie when their dtype, shape and layout allow (a mutable input such as a KV cache is
// updated in place, so it must), outputs written into fresh arrays.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "staticlm/builtin/builtin_runtime.h"
#include "staticlm/format/metadata.h"
#include "staticlm/format/program_file.h"
#include "staticlm/runtime/method_session.h"
#include "staticlm/runtime/program.h"

#include "bindings.h"
#include "status_errors.h"

namespace py = pybind11;

namespace staticlm::python {
namespace {

// The numpy dtype of a tensor dtype (bf16 as its raw uint16 bits: numpy has no bfloat16).
Result<py::dtype> numpy_dtype(DType dtype) {
  switch (dtype) {
    case DType::kF32: return py::dtype("float32");
    case DType::kF16: return py::dtype("float16");
    case DType::kBF16: return py::dtype("uint16");
    case DType::kI32: return py::dtype("int32");
    case DType::kI64: return py::dtype("int64");
    case DType::kU8: return py::dtype("uint8");
    default: return unimplemented("dtype ", dtype_name(dtype), " has no numpy equivalent");
  }
}

py::dict tensor_info(const IoTensorInfo& info) {
  py::dict out;
  out["name"] = info.name;
  out["dtype"] = std::string(dtype_name(info.dtype));
  out["shape"] = py::tuple(py::cast(info.shape));
  out["nbytes"] = info.nbytes;
  out["mutable"] = info.is_mutable;
  return out;
}

py::dict metadata_dict(const ProgramFile& file) {
  py::dict out;
  const fb::Program& program = file.program();
  if (program.metadata() == nullptr) {
    return out;
  }
  for (const fb::MetadataEntry* entry : *program.metadata()) {
    const MetadataValue value = value_or_raise(metadata_value(*entry));
    out[py::str(entry->key()->str())] = std::visit([](const auto& v) -> py::object { return py::cast(v); }, value);
  }
  return out;
}

class PyProgram {
 public:
  PyProgram(const std::string& path, int threads) {
    runtime_ = value_or_raise(builtin_engine_runtime());
    LoadOptions options;
    options.kernels = runtime_.kernels.get();
    options.backends = runtime_.backends.get();
    options.num_threads = threads;
    auto loaded = [&] {
      py::gil_scoped_release release;
      return Program::load(path, options);
    }();
    program_ = value_or_raise(std::move(loaded));
  }

  py::dict metadata() const { return metadata_dict(program_->file()); }
  std::string path() const { return program_->file().path(); }

  std::vector<std::string> method_names() const { return staticlm::method_names(program_->file()); }

  py::dict method_meta(const std::string& name) const {
    py::list inputs;
    for (const IoTensorInfo& info : value_or_raise(method_inputs(program_->file(), name))) {
      inputs.append(tensor_info(info));
    }
    py::list outputs;
    for (const IoTensorInfo& info : value_or_raise(method_outputs(program_->file(), name))) {
      outputs.append(tensor_info(info));
    }
    py::dict out;
    out["name"] = name;
    out["inputs"] = inputs;
    out["outputs"] = outputs;
    return out;
  }

  py::dict run_method(const std::string& name, const py::dict& given) const {
    const std::vector<IoTensorInfo> inputs = value_or_raise(method_inputs(program_->file(), name));
    const std::vector<IoTensorInfo> outputs = value_or_raise(method_outputs(program_->file(), name));
    for (const auto& [key, value] : given) {
      const std::string key_name = py::str(key);
      bool known = false;
      for (const IoTensorInfo& info : inputs) known = known || info.name == key_name;
      if (!known) {
        raise_status(invalid_argument("method '", name, "' has no input '", key_name, "'"));
      }
    }
    std::unique_ptr<MethodSession> session = value_or_raise(program_->new_session(name));
    std::vector<py::array> keep;  // the arrays bound, alive until execute returns
    for (const IoTensorInfo& info : inputs) {
      if (!given.contains(info.name)) {
        raise_status(invalid_argument("method '", name, "': input '", info.name, "' (", dtype_name(info.dtype),
                                      shape_string(info.shape), ") is not given"));
      }
      keep.push_back(bound_input(info, given[py::str(info.name)]));
      ok_or_raise(session->bind_input(info.name, info.dtype, keep.back().mutable_data(),
                                      static_cast<uint64_t>(keep.back().nbytes())));
    }
    py::dict out;
    for (const IoTensorInfo& info : outputs) {
      py::array array(value_or_raise(numpy_dtype(info.dtype)), info.shape);
      ok_or_raise(
          session->bind_output(info.name, info.dtype, array.mutable_data(), static_cast<uint64_t>(array.nbytes())));
      out[py::str(info.name)] = array;
    }
    Status status;
    {
      py::gil_scoped_release release;
      status = session->execute();
    }
    ok_or_raise(status);
    return out;
  }

 private:
  // The array to bind for input `info`: `value` itself when its dtype, shape and C layout fit (a
  // mutable input must: the program writes into it), else a C-contiguous copy of a read-only one.
  static py::array bound_input(const IoTensorInfo& info, const py::handle value) {
    const py::dtype dtype = value_or_raise(numpy_dtype(info.dtype));
    if (!py::isinstance<py::array>(value)) {
      raise_status(invalid_argument("input '", info.name, "': expected a numpy array of ", dtype_name(info.dtype),
                                    shape_string(info.shape), ", found ",
                                    std::string(py::str(py::type::of(value).attr("__name__")))));
    }
    py::array array = py::reinterpret_borrow<py::array>(value);
    if (!array.dtype().attr("__eq__")(dtype).cast<bool>()) {
      raise_status(invalid_argument("input '", info.name, "': expected dtype ", dtype.attr("name").cast<std::string>(),
                                    " (", dtype_name(info.dtype), "), found ",
                                    array.dtype().attr("name").cast<std::string>()));
    }
    Shape shape(array.shape(), array.shape() + array.ndim());
    if (shape != info.shape) {
      raise_status(invalid_argument("input '", info.name, "': expected shape ", shape_string(info.shape), ", found ",
                                    shape_string(shape)));
    }
    const bool in_place = (array.flags() & py::array::c_style) != 0 && array.writeable();
    if (info.is_mutable && !in_place) {
      raise_status(invalid_argument(
          "input '", info.name, "' is updated in place: pass a writable C-contiguous array (np.ascontiguousarray)"));
    }
    return in_place ? array : py::array(py::array::ensure(array, py::array::c_style | py::array::forcecast));
  }

  EngineRuntime runtime_;
  std::shared_ptr<const Program> program_;
};

}  // namespace

void register_program(py::module_& m) {
  py::class_<PyProgram>(m, "Program", "A program file loaded with this build's kernels and backends.")
      .def_property_readonly("metadata", &PyProgram::metadata, "The program's metadata: {key: value}.")
      .def_property_readonly("path", &PyProgram::path, "The file it was loaded from.")
      .def("method_names", &PyProgram::method_names, "The methods, in file order.")
      .def("method_meta", &PyProgram::method_meta, py::arg("name"),
           "A method's inputs and outputs: {'name', 'inputs': [{'name', 'dtype', 'shape', 'nbytes', "
           "'mutable'}], 'outputs': [...]}.")
      .def("run_method", &PyProgram::run_method, py::arg("name"), py::arg("inputs"),
           "Runs a method on {input name: numpy array} and returns {output name: numpy array}. Inputs "
           "whose dtype, shape and layout fit are read where they lie (a mutable input is updated in "
           "place and must be a writable C-contiguous array); a wrong dtype or shape raises, naming "
           "the input. bf16 tensors are uint16 arrays of their bits.");
  m.def(
      "program_metadata",
      [](const std::string& path) { return metadata_dict(*value_or_raise(ProgramFile::open(path))); }, py::arg("path"),
      "A program file's metadata, read without loading the program (the file is verified).");
  m.def(
      "load_program", [](const std::string& path, int threads) { return PyProgram(path, threads); }, py::arg("path"),
      py::kw_only(), py::arg("threads") = 0,
      "Opens a program file (mapped, verified, delegates initialised). threads counts the caller's; "
      "0 = one per physical core.");
}

}  // namespace staticlm::python
