// SPDX-License-Identifier: Apache-2.0
// Program: a program file loaded once and prepared for any number of sessions.
//
// Program::load maps and verifies the file (format/program_file.h), resolves each delegate
// backend's runtime options, then prepares every method (PreparedMethod: the one verifier and
// executor): a kernel for each kernel call, a DelegateHandle for each delegate call (init runs
// here, once). After load a Program is immutable; new_session() gives a MethodSession with its
// own arena, bindings and delegate instances, so sessions on several threads share one Program.
// Constants and named data are zero-copy views into the mapping.
//
// Ownership: Programs are shared (std::shared_ptr<const Program>); every session keeps its
// Program alive. The registries in LoadOptions must outlive the Program.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/core/thread_pool.h"
#include "staticlm/format/program_file.h"
#include "staticlm/options/option_value.h"
#include "staticlm/runtime/backend_runtime.h"
#include "staticlm/runtime/kernel_registry.h"
#include "staticlm/runtime/method_session.h"
#include "staticlm/runtime/prepared_method.h"

namespace staticlm {

struct LoadOptions {
  const KernelRegistry* kernels = nullptr;            // required
  const BackendRuntimeRegistry* backends = nullptr;   // needed only for programs with delegates
  std::shared_ptr<ThreadPool> thread_pool;            // shared with the caller; created if empty
  int num_threads = 0;                                // for a created pool; 0 = all cores
  CpuFeatures kernel_features = CpuFeatures::host();  // the kernels the program's own calls may use
  // Runtime options by backend id, checked against each backend's runtime option schema. Options
  // for a backend no delegate of the program uses are refused.
  std::map<std::string, OptionMap, std::less<>> backend_options;
};

// The inputs and outputs of method `name` read from a verified file, without preparing anything:
// contracts validate a program with these before it is loaded. NotFound lists the methods.
Result<std::vector<IoTensorInfo>> method_inputs(const ProgramFile& file, std::string_view name);
Result<std::vector<IoTensorInfo>> method_outputs(const ProgramFile& file, std::string_view name);
std::vector<std::string> method_names(const ProgramFile& file);

class Program : public std::enable_shared_from_this<Program> {
 public:
  // Maps, verifies and prepares `path`. Errors are those of ProgramFile::open (with the path), of
  // resolve_options for a backend's runtime options (InvalidArgument / FailedPrecondition naming
  // the option), and of PreparedMethod::prepare for each method: InvalidArgument when an
  // instruction does not type-check or reads a value nothing wrote, Unimplemented when no kernel
  // or backend runs it, a delegate's init error.
  static Result<std::shared_ptr<const Program>> load(const std::string& path, LoadOptions options);
  static Result<std::shared_ptr<const Program>> from_file(std::shared_ptr<const ProgramFile> file, LoadOptions options);
  ~Program();

  const ProgramFile& file() const { return *file_; }
  std::vector<std::string> method_names() const;
  // The prepared method `name`. NotFound lists the methods.
  Result<const PreparedMethod*> method(std::string_view name) const;
  // A new session over method `name` (errors as method() and PreparedMethod::new_session).
  // Thread-safe: any number of threads may open sessions on one Program.
  Result<std::unique_ptr<MethodSession>> new_session(std::string_view name) const;
  ThreadPool& thread_pool() const { return *thread_pool_; }
  const std::shared_ptr<ThreadPool>& shared_thread_pool() const { return thread_pool_; }
  // The effective runtime options of each backend the program's delegates use.
  const std::map<std::string, ResolvedOptions, std::less<>>& backend_options() const { return backend_options_; }

 private:
  Program() = default;
  class Loader;

  // Declared in dependency order: the prepared methods (last, destroyed first) borrow the rest.
  std::shared_ptr<const ProgramFile> file_;
  std::shared_ptr<ThreadPool> thread_pool_;
  std::unique_ptr<NamedDataMap> named_data_;
  std::map<std::string, ResolvedOptions, std::less<>> backend_options_;
  std::vector<std::unique_ptr<PreparedMethod>> methods_;
};

}  // namespace staticlm
