#include "staticlm/tools/model_loader.h"

#include <chrono>

#include "staticlm/tools/register_backends.h"
#include "staticlm/tools/registration.h"

namespace staticlm::cli {
namespace {

// The allocator a program's delegates ask for (the first backend that names one this build
// has), so `run` uses shared memory for an accelerator's program without being told.
Result<std::string> preferred_allocator(const ProgramFile& file, const AllocatorRegistry& allocators) {
  BackendRegistry backends;
  STATICLM_RETURN_IF_ERROR(register_backends(backends));
  if (const auto* delegates = file.program().delegates()) {
    for (const fb::Delegate* delegate : *delegates) {
      auto backend = backends.get(delegate->backend_id()->string_view());
      if (!backend.ok() || (*backend)->preferred_allocator().empty()) {
        continue;
      }
      const std::string name((*backend)->preferred_allocator());
      for (const auto& [known, description] : allocators.list()) {
        if (known == name) {
          return name;
        }
      }
    }
  }
  return std::string("heap");
}

}  // namespace

Result<LoadedModel> load_model(const ModelLoadOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  LoadedModel model;
  model.kernels = std::make_unique<KernelRegistry>();
  STATICLM_RETURN_IF_ERROR(register_kernels(*model.kernels));
  model.backends = std::make_unique<BackendRuntimeRegistry>();
  STATICLM_RETURN_IF_ERROR(register_backend_runtimes(*model.backends));
  model.contracts = std::make_unique<ContractRegistry>();
  STATICLM_RETURN_IF_ERROR(register_contracts(*model.contracts));
  model.allocators = std::make_unique<AllocatorRegistry>();
  STATICLM_RETURN_IF_ERROR(register_io_allocators(*model.allocators));

  LoadOptions load;
  load.kernels = model.kernels.get();
  load.backends = model.backends.get();
  load.num_threads = options.num_threads;
  STATICLM_ASSIGN_OR_RETURN(model.program, Program::load(options.path, load));
  STATICLM_ASSIGN_OR_RETURN(model.contract, model.contracts->select(model.program->file()));
  model.io_allocator = options.io_allocator;
  if (model.io_allocator.empty()) {
    STATICLM_ASSIGN_OR_RETURN(model.io_allocator, preferred_allocator(model.program->file(), *model.allocators));
  }
  SessionOptions session;
  STATICLM_ASSIGN_OR_RETURN(session.allocator, model.allocators->create(model.io_allocator));
  session.strict_io = options.strict_io;
  STATICLM_ASSIGN_OR_RETURN(model.session, model.contract->open(*model.program, session));
  model.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return model;
}

}  // namespace staticlm::cli
