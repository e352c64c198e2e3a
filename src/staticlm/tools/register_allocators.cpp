#include "staticlm/tools/registration.h"

namespace staticlm::cli {

// I/O allocators beyond the built-in heap.
Status register_io_allocators(AllocatorRegistry&) { return ok_status(); }

}  // namespace staticlm::cli
