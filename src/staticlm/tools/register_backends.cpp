#include "staticlm/tools/registration.h"

namespace staticlm::cli {

// Delegate backends whose runtime side this build contains. None yet: programs with delegate
// calls are refused at load with the backend's name.
Status register_backend_runtimes(BackendRuntimeRegistry&) { return ok_status(); }

}  // namespace staticlm::cli
