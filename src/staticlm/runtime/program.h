// Program and Method: the loaded, runnable form of a program file.
//
// Program::load maps and verifies the file (format/program_file.h). Program::load_method then
// prepares one method: it type-checks every kernel call with the op set's inference, creates a
// prepared kernel for each from the kernel registry, inits delegates, and allocates the
// method's planned arena once. Constants are zero-copy views into the mapping. The caller
// binds each input and output by name to memory it owns (dtype and byte size checked) and
// calls execute(); bindings persist across calls, so a decode loop binds once.
//
// Ownership: a Method keeps the mapped file and thread pool alive itself, so it may outlive
// the Program it came from. Bound memory stays the caller's and must outlive its use.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/core/tensor.h"
#include "staticlm/core/thread_pool.h"
#include "staticlm/format/program_file.h"
#include "staticlm/runtime/backend_runtime.h"
#include "staticlm/runtime/kernel_registry.h"

namespace staticlm {

struct LoadOptions {
  const KernelRegistry* kernels = nullptr;           // required
  const BackendRuntimeRegistry* backends = nullptr;  // needed only for programs with delegates
  std::shared_ptr<ThreadPool> thread_pool;           // shared with the caller; created if empty
  int num_threads = 0;                               // for a created pool; 0 = all cores
};

struct IoTensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  uint64_t nbytes = 0;
  bool is_mutable = false;  // inputs only: the program writes into it in place
};

class Method {
 public:
  ~Method();
  Method(const Method&) = delete;
  Method& operator=(const Method&) = delete;

  const std::string& name() const { return name_; }
  std::span<const IoTensorInfo> inputs() const { return inputs_; }
  std::span<const IoTensorInfo> outputs() const { return outputs_; }
  // Index of the input / output called `name`, or -1.
  int input_index(std::string_view name) const;
  int output_index(std::string_view name) const;
  uint64_t arena_bytes() const { return arena_.size(); }

  // Binds caller memory to an input / output. Fails with NotFound for an unknown name (listing
  // the known ones) and InvalidArgument when dtype or byte size differ from the declaration.
  Status bind_input(std::string_view name, DType dtype, void* data, uint64_t nbytes);
  Status bind_output(std::string_view name, DType dtype, void* data, uint64_t nbytes);
  Status bind_input(std::string_view name, Tensor& tensor);
  Status bind_output(std::string_view name, Tensor& tensor);

  // Runs every instruction in order. Fails with FailedPrecondition when an input or output is
  // unbound, and with the failing instruction's error (prefixed with its index and op).
  Status execute();

 private:
  friend class Program;
  struct Step;
  Method();

  std::string name_;
  std::shared_ptr<const ProgramFile> file_;
  std::shared_ptr<ThreadPool> thread_pool_;
  std::vector<IoTensorInfo> inputs_;
  std::vector<IoTensorInfo> outputs_;
  std::vector<uint32_t> input_values_;   // value index of each input
  std::vector<uint32_t> output_values_;  // value index of each output
  std::vector<bool> input_bound_;
  std::vector<bool> output_bound_;
  std::vector<Shape> shapes_;       // per value; views borrow these
  std::vector<TensorView> values_;  // per value; data pointers patched by bind
  std::vector<Step> steps_;
  AlignedBuffer arena_;
};

class Program {
 public:
  // Maps and verifies `path`. Errors are those of ProgramFile::open, with the path.
  static Result<std::unique_ptr<Program>> load(const std::string& path, LoadOptions options);
  static Result<std::unique_ptr<Program>> from_file(std::unique_ptr<ProgramFile> file, LoadOptions options);

  const ProgramFile& file() const { return *file_; }
  std::vector<std::string> method_names() const;

  // The inputs and outputs of method `name`, read from the verified file without preparing the
  // method (contracts validate a program with this before anything is loaded). NotFound lists
  // the methods.
  Result<std::vector<IoTensorInfo>> method_inputs(std::string_view name) const;
  Result<std::vector<IoTensorInfo>> method_outputs(std::string_view name) const;

  // Prepares method `name`. Fails with NotFound (listing the methods) for an unknown name,
  // InvalidArgument when an instruction does not type-check or reads a value no earlier
  // instruction wrote, Unimplemented when no kernel / backend is available for it.
  Result<std::unique_ptr<Method>> load_method(std::string_view name) const;

 private:
  Program() = default;
  std::shared_ptr<const ProgramFile> file_;
  LoadOptions options_;
};

}  // namespace staticlm
