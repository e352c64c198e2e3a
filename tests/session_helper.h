// SPDX-License-Identifier: Apache-2.0
// Opens exported programs for tests the way Engine::open does (contract validation before the
// program is prepared), on the portable kernels and the cpu backend's run side plus any extra
// backend runtimes a test brings.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "staticlm/backends/cpu/runtime/cpu_runtime.h"
#include "staticlm/backends/portable/register.h"
#include "staticlm/llm/contract.h"
#include "staticlm/runtime/program.h"

namespace staticlm::testing {

// Kernels and backend runtimes a test program may need.
struct TestRuntimes {
  std::shared_ptr<KernelRegistry> kernels = std::make_shared<KernelRegistry>();
  std::shared_ptr<BackendRuntimeRegistry> backends = std::make_shared<BackendRuntimeRegistry>();
  // Runtime options by backend id (e.g. {"cpu", {{"isa", "portable"}}}).
  std::map<std::string, OptionMap, std::less<>> backend_options;
  Status status;

  explicit TestRuntimes(std::vector<std::shared_ptr<const BackendRuntime>> extra = {}) {
    status = register_portable_kernels(*kernels);
    if (status.ok()) status = register_cpu_backend_runtime(*backends);
    for (auto& runtime : extra) {
      if (status.ok()) status = backends->add(std::move(runtime));
    }
  }
  LoadOptions load_options(int threads = 2) const {
    LoadOptions load;
    load.kernels = kernels.get();
    load.backends = backends.get();
    load.num_threads = threads;
    load.backend_options = backend_options;
    return load;
  }
};

struct TestSession {
  std::shared_ptr<TestRuntimes> runtimes;
  std::unique_ptr<ContractRegistry> contracts;
  std::shared_ptr<const Program> program;
  std::unique_ptr<LlmSession> session;
};

inline Result<TestSession> open_test_session(const std::string& path, SessionOptions options = {},
                                             std::shared_ptr<TestRuntimes> runtimes = nullptr) {
  TestSession out;
  out.runtimes = runtimes ? std::move(runtimes) : std::make_shared<TestRuntimes>();
  STATICLM_RETURN_IF_ERROR(out.runtimes->status);
  out.contracts = std::make_unique<ContractRegistry>();
  STATICLM_RETURN_IF_ERROR(register_builtin_contracts(*out.contracts));
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<ProgramFile> file, ProgramFile::open(path));
  STATICLM_ASSIGN_OR_RETURN(const LlmContract* contract, out.contracts->select(*file));
  STATICLM_RETURN_IF_ERROR(contract->validate(*file));
  STATICLM_ASSIGN_OR_RETURN(out.program, Program::from_file(std::move(file), out.runtimes->load_options()));
  STATICLM_ASSIGN_OR_RETURN(out.session, contract->open(out.program, options));
  return out;
}

}  // namespace staticlm::testing
