// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/qnn/rpcmem/rpcmem_library.h"

#include <dlfcn.h>
#include <unistd.h>

#include <utility>

namespace staticlm {
namespace {

std::string loader_error() {
  const char* message = dlerror();
  return message != nullptr ? message : "unknown dlopen error";
}

// dlsym hands back an object pointer; POSIX guarantees it converts to the function's type.
template <typename Function>
Function* resolve(void* handle, const char* symbol) {
  dlerror();
  return reinterpret_cast<Function*>(dlsym(handle, symbol));
}

}  // namespace

Result<std::unique_ptr<RpcmemLibrary>> RpcmemLibrary::load(const std::string& path) {
  std::unique_ptr<RpcmemLibrary> library(new RpcmemLibrary());
  library->path_ = path;
  library->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library->handle_ == nullptr) {
    const std::string error = loader_error();
    // A path that exists but does not load (wrong architecture, missing dependency) is not
    // "not found"; a bare file name searched for in the loader's path is.
    const bool exists = path.find('/') != std::string::npos && access(path.c_str(), F_OK) == 0;
    if (exists) {
      return unavailable(path, " cannot be loaded: ", error);
    }
    return unavailable(path, " not found: ", error);
  }
  RpcmemApi& api = library->api_;
  api.alloc = resolve<void*(int, uint32_t, int)>(library->handle_, "rpcmem_alloc");
  api.free = resolve<void(void*)>(library->handle_, "rpcmem_free");
  api.to_fd = resolve<int(void*)>(library->handle_, "rpcmem_to_fd");
  const std::pair<const char*, bool> required[] = {{"rpcmem_alloc", api.alloc != nullptr},
                                                   {"rpcmem_free", api.free != nullptr},
                                                   {"rpcmem_to_fd", api.to_fd != nullptr}};
  for (const auto& [symbol, present] : required) {
    if (!present) {
      return unavailable(path, " has no symbol '", symbol, "'");
    }
  }
  api.init = resolve<void()>(library->handle_, "rpcmem_init");
  api.deinit = resolve<void()>(library->handle_, "rpcmem_deinit");
  if (api.init != nullptr) {
    api.init();
    library->initialised_ = true;
  }
  return library;
}

RpcmemLibrary::~RpcmemLibrary() {
  if (handle_ == nullptr) {
    return;
  }
  if (initialised_ && api_.deinit != nullptr) {
    api_.deinit();
  }
  dlclose(handle_);
}

}  // namespace staticlm
