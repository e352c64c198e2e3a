// SPDX-License-Identifier: Apache-2.0
// The test stub libcdsprpc.so's failure switches and counters (test_stub/cdsprpc_stub.cpp),
// reached through the same loaded library the RpcmemAllocator uses (STATICLM_RPCMEM_STUB).
#pragma once

#include <dlfcn.h>

namespace staticlm::testing {

class StubControl {
 public:
  StubControl() {
    handle_ = dlopen(STATICLM_RPCMEM_STUB, RTLD_NOW | RTLD_LOCAL);
    if (handle_ != nullptr) {
      fail_next_allocs_ = symbol<void (*)(int)>("stub_fail_next_allocs");
      fail_alloc_at_ = symbol<void (*)(int)>("stub_fail_alloc_at");
      fail_to_fd_at_ = symbol<void (*)(int)>("stub_fail_to_fd_at");
      live_blocks_ = symbol<int (*)()>("stub_live_blocks");
      bad_frees_ = symbol<int (*)()>("stub_bad_frees");
    }
  }
  ~StubControl() {
    if (ok()) {
      disarm();
    }
    if (handle_ != nullptr) {
      dlclose(handle_);
    }
  }
  StubControl(const StubControl&) = delete;
  StubControl& operator=(const StubControl&) = delete;

  bool ok() const {
    return fail_next_allocs_ != nullptr && fail_alloc_at_ != nullptr && fail_to_fd_at_ != nullptr &&
           live_blocks_ != nullptr && bad_frees_ != nullptr;
  }
  void fail_every_alloc() { fail_next_allocs_(-1); }
  // Only the n-th rpcmem_alloc / rpcmem_to_fd from now fails.
  void fail_alloc_at(int n) { fail_alloc_at_(n); }
  void fail_to_fd_at(int n) { fail_to_fd_at_(n); }
  void disarm() {
    fail_next_allocs_(0);
    fail_alloc_at_(0);
    fail_to_fd_at_(0);
  }
  int live_blocks() const { return live_blocks_(); }
  int bad_frees() const { return bad_frees_(); }

 private:
  template <typename F>
  F symbol(const char* name) {
    return reinterpret_cast<F>(dlsym(handle_, name));
  }

  void* handle_ = nullptr;
  void (*fail_next_allocs_)(int) = nullptr;
  void (*fail_alloc_at_)(int) = nullptr;
  void (*fail_to_fd_at_)(int) = nullptr;
  int (*live_blocks_)() = nullptr;
  int (*bad_frees_)() = nullptr;
};

}  // namespace staticlm::testing
