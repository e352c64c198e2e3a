// Opens a program file as an LLM session the way every CLI command that runs a model does:
// portable kernels (plus registered backends), contract selection and validation, and the
// I/O allocator chosen by name.
#pragma once

#include <memory>
#include <string>

#include "staticlm/core/result.h"
#include "staticlm/llm/allocator_registry.h"
#include "staticlm/llm/contract.h"
#include "staticlm/runtime/kernel_registry.h"
#include "staticlm/runtime/program.h"

namespace staticlm::cli {

struct ModelLoadOptions {
  std::string path;
  // Empty: the preferred allocator of the program's delegate backend, else the heap.
  std::string io_allocator;
  bool strict_io = false;
  int num_threads = 0;
};

struct LoadedModel {
  // Registries first: the program and session refer to them.
  std::unique_ptr<KernelRegistry> kernels;
  std::unique_ptr<BackendRuntimeRegistry> backends;
  std::unique_ptr<ContractRegistry> contracts;
  std::unique_ptr<AllocatorRegistry> allocators;
  std::unique_ptr<Program> program;
  const LlmContract* contract = nullptr;
  std::unique_ptr<LlmSession> session;
  std::string io_allocator;  // the allocator actually chosen
  double load_seconds = 0.0;
};

Result<LoadedModel> load_model(const ModelLoadOptions& options);

}  // namespace staticlm::cli
