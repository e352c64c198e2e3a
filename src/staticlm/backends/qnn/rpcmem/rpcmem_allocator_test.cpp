// SPDX-License-Identifier: Apache-2.0
// The real rpcmem allocator against a stub libcdsprpc.so (test_stub/): only the vendor C API is
// fake. The test opens the same stub library to reach its hooks; dlopen shares one copy.
#include "staticlm/backends/qnn/rpcmem/rpcmem_allocator.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "staticlm/backends/shm/shared_memory_test_util.h"

namespace staticlm {
namespace {

using testing::LogCapture;

// The stub's rpcmem_to_fd and its test hooks.
struct StubHooks {
  void (*reset)() = nullptr;
  void (*fail_next_allocs)(int) = nullptr;
  void (*fail_next_to_fd)(int) = nullptr;
  int (*live_blocks)() = nullptr;
  int (*alloc_calls)() = nullptr;
  int (*bad_frees)() = nullptr;
  int (*init_calls)() = nullptr;
  int (*deinit_calls)() = nullptr;
  int (*live_blocks_at_deinit)() = nullptr;
  int (*last_heap_id)() = nullptr;
  uint32_t (*last_flags)() = nullptr;
  int (*last_size)() = nullptr;
  int (*to_fd)(void*) = nullptr;
};

template <typename Function>
void resolve(void* handle, const char* symbol, Function*& out) {
  out = reinterpret_cast<Function*>(dlsym(handle, symbol));
  ASSERT_NE(out, nullptr) << "the stub library has no " << symbol;
}

class RpcmemAllocatorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    handle_ = dlopen(STATICLM_RPCMEM_STUB, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    resolve(handle_, "stub_reset", stub_.reset);
    resolve(handle_, "stub_fail_next_allocs", stub_.fail_next_allocs);
    resolve(handle_, "stub_fail_next_to_fd", stub_.fail_next_to_fd);
    resolve(handle_, "stub_live_blocks", stub_.live_blocks);
    resolve(handle_, "stub_alloc_calls", stub_.alloc_calls);
    resolve(handle_, "stub_bad_frees", stub_.bad_frees);
    resolve(handle_, "stub_init_calls", stub_.init_calls);
    resolve(handle_, "stub_deinit_calls", stub_.deinit_calls);
    resolve(handle_, "stub_live_blocks_at_deinit", stub_.live_blocks_at_deinit);
    resolve(handle_, "stub_last_heap_id", stub_.last_heap_id);
    resolve(handle_, "stub_last_flags", stub_.last_flags);
    resolve(handle_, "stub_last_size", stub_.last_size);
    resolve(handle_, "rpcmem_to_fd", stub_.to_fd);
  }
  static void TearDownTestSuite() {
    if (handle_ != nullptr) {
      dlclose(handle_);
    }
  }
  void SetUp() override {
    ASSERT_NE(stub_.reset, nullptr);
    stub_.reset();
  }
  void TearDown() override {
    EXPECT_EQ(stub_.live_blocks(), 0) << "the allocator leaked vendor blocks";
    EXPECT_EQ(stub_.bad_frees(), 0) << "the allocator passed rpcmem_free a pointer rpcmem_alloc did not return";
  }

  static std::unique_ptr<RpcmemAllocator> stub_allocator() {
    RpcmemAllocatorOptions options;
    options.library_path = STATICLM_RPCMEM_STUB;
    auto allocator = std::make_unique<RpcmemAllocator>(options);
    EXPECT_TRUE(allocator->available()) << allocator->status().to_string();
    return allocator;
  }

  static inline void* handle_ = nullptr;
  static inline StubHooks stub_;
};

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name); old != nullptr) {
      saved_ = old;
    }
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (saved_) {
      setenv(name_, saved_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

TEST_F(RpcmemAllocatorTest, InitialisesTheLibraryAndAllocatesFromTheSystemHeap) {
  {
    auto allocator = stub_allocator();
    EXPECT_EQ(stub_.init_calls(), 1);
    EXPECT_TRUE(allocator->status().ok());
    EXPECT_EQ(allocator->library_path(), STATICLM_RPCMEM_STUB);
    void* pointer = allocator->allocate(1000, 64);
    ASSERT_NE(pointer, nullptr);
    EXPECT_EQ(stub_.last_heap_id(), 25) << "RPCMEM_HEAP_ID_SYSTEM";
    EXPECT_EQ(stub_.last_flags(), 1u) << "RPCMEM_DEFAULT_FLAGS";
    EXPECT_EQ(stub_.last_size(), 1000 + 63) << "the size is padded by alignment - 1";
    allocator->free(pointer);
  }
  EXPECT_EQ(stub_.deinit_calls(), 1);
}

TEST_F(RpcmemAllocatorTest, EveryPointerIsAlignedAndSharedThroughTheVendorFd) {
  auto allocator = stub_allocator();
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  testing::for_each_block_shape(*allocator,
                                [&](uint8_t* pointer, size_t, size_t alignment, const SharedBlockInfo& info) {
                                  EXPECT_EQ(info.kind, SharedMemoryKind::kRpcmem);
                                  EXPECT_EQ(info.fd, stub_.to_fd(pointer)) << "the fd is the vendor's fd of this block";
                                  // The stub places blocks one page off every larger power of two, so these need
                                  // padding.
                                  if (alignment > page) {
                                    EXPECT_GT(info.block_offset, 0u);
                                  }
                                });
}

TEST_F(RpcmemAllocatorTest, LookupFindsEveryByteInsideABlock) {
  auto allocator = stub_allocator();
  auto* pointer = static_cast<uint8_t*>(allocator->allocate(10000, 16384));
  ASSERT_NE(pointer, nullptr);
  testing::expect_lookup_inside(*allocator, pointer, 10000, {1, 4095, 4096, 9999});
  allocator->free(pointer);
}

TEST_F(RpcmemAllocatorTest, MemoryComesBackZeroFilledEvenWhenReused) {
  auto allocator = stub_allocator();
  for (int round = 0; round < 2; ++round) {
    auto* pointer = static_cast<uint8_t*>(allocator->allocate(5000, 64));
    ASSERT_NE(pointer, nullptr);
    for (size_t i = 0; i < 5000; ++i) {
      ASSERT_EQ(pointer[i], 0) << "round " << round << " byte " << i;
    }
    std::memset(pointer, 0xAB, 5000);
    allocator->free(pointer);
  }
}

TEST_F(RpcmemAllocatorTest, DoubleAndForeignFreesAreRefusedAndNeverReachTheVendor) {
  auto allocator = stub_allocator();
  LogCapture logs;
  auto* pointer = static_cast<uint8_t*>(allocator->allocate(4096, 4096));
  auto* other = static_cast<uint8_t*>(allocator->allocate(4096, 4096));
  ASSERT_NE(pointer, nullptr);
  ASSERT_NE(other, nullptr);
  allocator->free(pointer);
  EXPECT_EQ(stub_.live_blocks(), 1);
  allocator->free(pointer);
  int local = 0;
  allocator->free(&local);
  allocator->free(other + 100);
  EXPECT_EQ(logs.warnings_containing("allocator 'rpcmem': free refused: pointer"), 3) << logs.all();
  EXPECT_EQ(logs.warnings_containing("a double free or a foreign pointer"), 2) << logs.all();
  EXPECT_EQ(allocator->stats().refused_frees, 3u);
  EXPECT_EQ(stub_.live_blocks(), 1) << "the refused interior free left the block alone";
  allocator->free(other);
}

TEST_F(RpcmemAllocatorTest, SizesAnIntCannotHoldAreRefusedWithoutCallingTheVendor) {
  auto allocator = stub_allocator();
  LogCapture logs;
  const size_t int_max = static_cast<size_t>(std::numeric_limits<int>::max());
  EXPECT_EQ(allocator->allocate(std::numeric_limits<size_t>::max(), 64), nullptr);
  EXPECT_EQ(allocator->allocate(std::numeric_limits<size_t>::max() - 10, 65536), nullptr);
  EXPECT_EQ(allocator->allocate(int_max + 1, 64), nullptr);
  EXPECT_EQ(allocator->allocate(size_t{1} << 40, 64), nullptr);
  EXPECT_EQ(allocator->allocate(int_max - 62, 64), nullptr) << "fits an int only without the padding";
  EXPECT_EQ(allocator->allocate(100, 48), nullptr) << "not a power of two";
  EXPECT_EQ(stub_.alloc_calls(), 0) << "a size that does not fit was passed on (truncated?)";
  EXPECT_EQ(logs.warnings_containing("rpcmem_alloc takes an int size, at most 2147483647 bytes"), 1) << logs.all();
  EXPECT_EQ(allocator->stats().failed_allocations, 6u);

  // The largest size that fits, padding included, is passed on exactly (and here refused).
  stub_.fail_next_allocs(1);
  EXPECT_EQ(allocator->allocate(int_max - 63, 64), nullptr);
  EXPECT_EQ(stub_.alloc_calls(), 1);
  EXPECT_EQ(stub_.last_size(), std::numeric_limits<int>::max());
}

TEST_F(RpcmemAllocatorTest, VendorFailuresReturnNullAndLeakNothing) {
  auto allocator = stub_allocator();
  LogCapture logs;
  stub_.fail_next_allocs(2);
  EXPECT_EQ(allocator->allocate(100, 64), nullptr);
  EXPECT_EQ(allocator->allocate(100, 64), nullptr);
  EXPECT_EQ(logs.warnings_containing("rpcmem_alloc(heap 25, flags 1, 163 bytes) returned null"), 1) << logs.all();
  void* pointer = allocator->allocate(100, 64);
  ASSERT_NE(pointer, nullptr) << "the stub fails only the next two";

  stub_.fail_next_to_fd(1);
  EXPECT_EQ(allocator->allocate(100, 64), nullptr) << "a block without an fd cannot be shared";
  EXPECT_EQ(stub_.live_blocks(), 1) << "the block without an fd was returned to the vendor";
  allocator->free(pointer);
  EXPECT_EQ(allocator->stats().failed_allocations, 3u);
}

TEST_F(RpcmemAllocatorTest, BindingsCarryTheVendorFdAndOffset) {
  auto allocator = stub_allocator();
  auto* cache = static_cast<uint8_t*>(allocator->allocate(8192, 65536));
  ASSERT_NE(cache, nullptr);
  ASSERT_TRUE(allocator->bind(cache, {"prefill", "v_cache_1", IoRole::kCache, 8192}).ok());
  ASSERT_TRUE(allocator->bind(cache, {"decode", "v_cache_1", IoRole::kCache, 8192}).ok());
  for (const char* method : {"prefill", "decode"}) {
    auto binding = allocator->binding(method, "v_cache_1");
    ASSERT_TRUE(binding.ok()) << method;
    EXPECT_EQ(binding->fd, stub_.to_fd(cache));
    EXPECT_EQ(binding->offset, allocator->lookup(cache)->block_offset);
    EXPECT_EQ(binding->kind, SharedMemoryKind::kRpcmem);
  }
  EXPECT_EQ(allocator->bind(cache, {"decode", "v_cache_1", IoRole::kCache, 8193}).code(), StatusCode::kOutOfRange);
  allocator->free(cache);
}

TEST_F(RpcmemAllocatorTest, ConcurrentAllocateAndFreeFromFourThreads) {
  auto allocator = stub_allocator();
  testing::exercise_concurrently(*allocator, 4, 300);
  EXPECT_EQ(allocator->stats().live_blocks, 0u);
  EXPECT_EQ(allocator->stats().refused_frees, 0u);
}

TEST_F(RpcmemAllocatorTest, DestructionFreesLiveBlocksBeforeDeinit) {
  LogCapture logs;
  {
    auto allocator = stub_allocator();
    ASSERT_NE(allocator->allocate(100, 64), nullptr);
    ASSERT_NE(allocator->allocate(100, 64), nullptr);
  }
  EXPECT_EQ(stub_.live_blocks(), 0);
  EXPECT_EQ(stub_.deinit_calls(), 1);
  EXPECT_EQ(stub_.live_blocks_at_deinit(), 0);
  EXPECT_EQ(logs.warnings_containing("allocator 'rpcmem' destroyed with 2 block(s) never freed"), 1) << logs.all();
}

TEST_F(RpcmemAllocatorTest, AMissingLibraryMakesAnUnavailableAllocatorThatSaysWhyOnce) {
  LogCapture logs;
  RpcmemAllocatorOptions options;
  options.library_path = "/nonexistent/libcdsprpc.so";
  RpcmemAllocator allocator(options);
  EXPECT_FALSE(allocator.available());
  EXPECT_EQ(allocator.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(allocator.status().message().rfind("/nonexistent/libcdsprpc.so not found: ", 0), 0u)
      << allocator.status().message();
  EXPECT_EQ(allocator.allocate(100, 64), nullptr);
  EXPECT_EQ(allocator.allocate(100, 64), nullptr);
  EXPECT_EQ(logs.warnings_containing("I/O allocator 'rpcmem' is unavailable: /nonexistent/libcdsprpc.so not found"), 1)
      << logs.all();
  EXPECT_EQ(logs.warnings_containing("rpcmem"), 1) << "said once, not per allocation:\n" << logs.all();
  EXPECT_EQ(allocator.stats().failed_allocations, 2u);
  int local = 0;
  allocator.free(&local);
  EXPECT_FALSE(allocator.lookup(&local).ok());
}

TEST_F(RpcmemAllocatorTest, TheDefaultLibraryNameIsLibcdsprpc) {
  ScopedEnv unset(kRpcmemLibraryEnv, std::nullopt);
  if (void* real = dlopen("libcdsprpc.so", RTLD_NOW | RTLD_LOCAL); real != nullptr) {
    dlclose(real);
    GTEST_SKIP() << "this machine has a real libcdsprpc.so";
  }
  LogCapture logs;
  RpcmemAllocator allocator;
  EXPECT_FALSE(allocator.available());
  EXPECT_EQ(allocator.library_path(), "libcdsprpc.so");
  EXPECT_EQ(allocator.status().message().rfind("libcdsprpc.so not found: ", 0), 0u) << allocator.status().message();
}

TEST_F(RpcmemAllocatorTest, TheEnvironmentNamesTheLibraryUnlessTheOptionsDo) {
  {
    ScopedEnv env(kRpcmemLibraryEnv, std::string(STATICLM_RPCMEM_STUB));
    RpcmemAllocator allocator;
    EXPECT_TRUE(allocator.available()) << allocator.status().to_string();
    EXPECT_EQ(allocator.library_path(), STATICLM_RPCMEM_STUB);
  }
  {
    LogCapture logs;
    ScopedEnv env(kRpcmemLibraryEnv, std::string("/nonexistent/from_env.so"));
    RpcmemAllocator from_env;
    EXPECT_FALSE(from_env.available());
    EXPECT_NE(from_env.status().message().find("/nonexistent/from_env.so"), std::string::npos);
    RpcmemAllocatorOptions options;
    options.library_path = STATICLM_RPCMEM_STUB;
    RpcmemAllocator explicit_path(options);
    EXPECT_TRUE(explicit_path.available()) << explicit_path.status().to_string();
  }
}

TEST_F(RpcmemAllocatorTest, AMissingEntryPointOrAnUnloadableFileIsUnavailable) {
  LogCapture logs;
  RpcmemAllocatorOptions options;
  options.library_path = STATICLM_RPCMEM_STUB_WITHOUT_TO_FD;
  RpcmemAllocator without_to_fd(options);
  EXPECT_FALSE(without_to_fd.available());
  EXPECT_NE(without_to_fd.status().message().find("has no symbol 'rpcmem_to_fd'"), std::string::npos)
      << without_to_fd.status().message();
  EXPECT_EQ(without_to_fd.allocate(64, 64), nullptr);

  const std::string not_elf = (std::filesystem::path(::testing::TempDir()) / "not_a_library.so").string();
  std::ofstream(not_elf) << "not an ELF file";
  options.library_path = not_elf;
  RpcmemAllocator unloadable(options);
  EXPECT_FALSE(unloadable.available());
  EXPECT_NE(unloadable.status().message().find(not_elf + " cannot be loaded: "), std::string::npos)
      << unloadable.status().message();
}

}  // namespace
}  // namespace staticlm
