#include "staticlm/backends/portable/register.h"
#include "staticlm/tools/registration.h"

namespace staticlm::cli {

Status register_kernels(KernelRegistry& registry) { return register_portable_kernels(registry); }

Status register_contracts(ContractRegistry& registry) { return register_builtin_contracts(registry); }

}  // namespace staticlm::cli
