// Opens an exported program as an hf_static session on the portable backend, for tests.
#pragma once

#include <memory>
#include <string>

#include "staticlm/backends/portable/register.h"
#include "staticlm/llm/contract.h"
#include "staticlm/runtime/program.h"

namespace staticlm::testing {

struct TestSession {
  std::unique_ptr<KernelRegistry> kernels;
  std::unique_ptr<ContractRegistry> contracts;
  std::unique_ptr<Program> program;
  std::unique_ptr<LlmSession> session;
};

inline Result<TestSession> open_test_session(const std::string& path, SessionOptions options = {}) {
  TestSession out;
  out.kernels = std::make_unique<KernelRegistry>();
  STATICLM_RETURN_IF_ERROR(register_portable_kernels(*out.kernels));
  out.contracts = std::make_unique<ContractRegistry>();
  STATICLM_RETURN_IF_ERROR(register_builtin_contracts(*out.contracts));
  LoadOptions load;
  load.kernels = out.kernels.get();
  load.num_threads = 2;
  STATICLM_ASSIGN_OR_RETURN(out.program, Program::load(path, load));
  STATICLM_ASSIGN_OR_RETURN(const LlmContract* contract, out.contracts->select(out.program->file()));
  STATICLM_ASSIGN_OR_RETURN(out.session, contract->open(*out.program, options));
  return out;
}

}  // namespace staticlm::testing
