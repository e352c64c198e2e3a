// SPDX-License-Identifier: Apache-2.0
// A stand-in for Qualcomm's libcdsprpc.so, for tests only: the rpcmem C API backed by memfd +
// mmap, plus hooks (stub_*) a test calls to force failures and to see what the allocator did.
// Each block is placed one page past a 128 KiB boundary, so an alignment above the page size
// always needs the allocator's padding, as it may with real rpcmem.
//
// Built twice: as libcdsprpc.so, and with STATICLM_STUB_WITHOUT_TO_FD as a library that lacks
// rpcmem_to_fd (to test a missing entry point).
#include <unistd.h>

#include <cstdint>
#include <map>
#include <mutex>

#include <sys/mman.h>

namespace {

constexpr uintptr_t kPlacement = 128 * 1024;

struct StubBlock {
  size_t length;
  int fd;
};

struct StubState {
  std::mutex mutex;
  std::map<uintptr_t, StubBlock> blocks;  // by start address
  int fail_allocs = 0;                    // < 0: every allocation fails
  int fail_to_fd = 0;
  int fail_alloc_at = 0;  // > 0: that many calls from now, one rpcmem_alloc returns null
  int fail_to_fd_at = 0;  // the same for rpcmem_to_fd
  int alloc_calls = 0;
  int bad_frees = 0;
  int init_calls = 0;
  int deinit_calls = 0;
  int live_at_deinit = -1;  // blocks still allocated when rpcmem_deinit last ran
  int last_heap_id = -1;
  uint32_t last_flags = 0;
  int last_size = -1;
};

StubState& state() {
  static StubState instance;
  return instance;
}

size_t page_size() {
  return static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// Maps `fd` at an address that is page-aligned but one page past a kPlacement boundary.
void* map_off_boundary(int fd, size_t length) {
  const size_t reserve = length + 2 * kPlacement;
  void* reserved = mmap(nullptr, reserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (reserved == MAP_FAILED) {
    return nullptr;
  }
  const uintptr_t low = reinterpret_cast<uintptr_t>(reserved);
  const uintptr_t target = (low + kPlacement - 1) / kPlacement * kPlacement + page_size();
  void* mapped = mmap(reinterpret_cast<void*>(target), length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
  if (mapped == MAP_FAILED) {
    munmap(reserved, reserve);
    return nullptr;
  }
  munmap(reserved, target - low);
  const uintptr_t end = target + length;
  munmap(reinterpret_cast<void*>(end), low + reserve - end);
  return mapped;
}

}  // namespace

extern "C" {

void rpcmem_init() {
  std::lock_guard<std::mutex> lock(state().mutex);
  ++state().init_calls;
}

void rpcmem_deinit() {
  std::lock_guard<std::mutex> lock(state().mutex);
  ++state().deinit_calls;
  state().live_at_deinit = static_cast<int>(state().blocks.size());
}

void* rpcmem_alloc(int heap_id, uint32_t flags, int size) {
  StubState& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    ++s.alloc_calls;
    s.last_heap_id = heap_id;
    s.last_flags = flags;
    s.last_size = size;
    if (size <= 0) {
      return nullptr;
    }
    if (s.fail_allocs != 0) {
      if (s.fail_allocs > 0) {
        --s.fail_allocs;
      }
      return nullptr;
    }
    if (s.fail_alloc_at > 0 && --s.fail_alloc_at == 0) {
      return nullptr;
    }
  }
  const size_t length = (static_cast<size_t>(size) + page_size() - 1) / page_size() * page_size();
  const int fd = memfd_create("cdsprpc-stub", MFD_CLOEXEC);
  if (fd < 0) {
    return nullptr;
  }
  if (ftruncate(fd, static_cast<off_t>(length)) != 0) {
    close(fd);
    return nullptr;
  }
  void* mapped = map_off_boundary(fd, length);
  if (mapped == nullptr) {
    close(fd);
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  s.blocks[reinterpret_cast<uintptr_t>(mapped)] = {length, fd};
  return mapped;
}

void rpcmem_free(void* pointer) {
  StubState& s = state();
  StubBlock block{};
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.blocks.find(reinterpret_cast<uintptr_t>(pointer));
    if (it == s.blocks.end()) {
      ++s.bad_frees;
      return;
    }
    block = it->second;
    s.blocks.erase(it);
  }
  munmap(pointer, block.length);
  close(block.fd);
}

#ifndef STATICLM_STUB_WITHOUT_TO_FD
int rpcmem_to_fd(void* pointer) {
  StubState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.fail_to_fd > 0) {
    --s.fail_to_fd;
    return -1;
  }
  if (s.fail_to_fd_at > 0 && --s.fail_to_fd_at == 0) {
    return -1;
  }
  const uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  auto it = s.blocks.upper_bound(address);
  if (it == s.blocks.begin()) {
    return -1;
  }
  --it;
  return address - it->first < it->second.length ? it->second.fd : -1;
}
#endif

// Test hooks.
void stub_reset() {
  StubState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.fail_allocs = 0;
  s.fail_to_fd = 0;
  s.fail_alloc_at = 0;
  s.fail_to_fd_at = 0;
  s.alloc_calls = 0;
  s.bad_frees = 0;
  s.init_calls = 0;
  s.deinit_calls = 0;
  s.live_at_deinit = -1;
  s.last_heap_id = -1;
  s.last_flags = 0;
  s.last_size = -1;
}

// The next `count` rpcmem_alloc calls return null; a negative count fails every call until reset.
void stub_fail_next_allocs(int count) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().fail_allocs = count;
}

void stub_fail_next_to_fd(int count) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().fail_to_fd = count;
}

// Only the n-th rpcmem_alloc (n >= 1) from now returns null; 0 disarms.
void stub_fail_alloc_at(int n) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().fail_alloc_at = n;
}

// Only the n-th rpcmem_to_fd from now returns -1; 0 disarms.
void stub_fail_to_fd_at(int n) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().fail_to_fd_at = n;
}

int stub_live_blocks() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return static_cast<int>(state().blocks.size());
}

int stub_alloc_calls() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().alloc_calls;
}

int stub_bad_frees() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().bad_frees;
}

int stub_init_calls() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().init_calls;
}

int stub_deinit_calls() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().deinit_calls;
}

int stub_live_blocks_at_deinit() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().live_at_deinit;
}

int stub_last_heap_id() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().last_heap_id;
}

uint32_t stub_last_flags() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().last_flags;
}

int stub_last_size() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().last_size;
}

}  // extern "C"
