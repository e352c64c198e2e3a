// SPDX-License-Identifier: Apache-2.0
// Shared-memory I/O end to end: the llama fixture generates the same tokens with every I/O buffer
// in heap memory, in shm (memfd), in rpcmem (the stub libcdsprpc.so), and in rpcmem forced to fail
// (the IOManager falls back to the heap); strict I/O turns that fallback into an error. The
// allocators' bindings then say which fd and offset back each tensor, as a backend would see.
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/mman.h>

#include "staticlm/backends/qnn/rpcmem/rpcmem_allocator.h"
#include "staticlm/backends/shm/shared_memory_test_util.h"
#include "staticlm/backends/shm/shm_allocator.h"
#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/llm/generator.h"

#include "fixture_reference.h"
#include "rpcmem_stub_control.h"
#include "session_helper.h"

namespace staticlm {
namespace {

constexpr uint64_t kBuffers = 2 * 3 + 4;  // per method: input_ids, cache_position, logits; 2 layers x (k, v)

using testing::StubControl;

class SharedMemoryIoTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    reference_ = testing::load_fixture_reference("llama");
    path_ = (std::filesystem::path(::testing::TempDir()) / "llama_shared_memory_io.slm").string();
    HfStaticExportOptions options;
    options.prefill_len = 8;
    options.max_cache_len = 64;
    auto summary = export_hf_static(testing::fixture_dir("llama"), path_, options);
    ASSERT_TRUE(summary.ok()) << summary.status().to_string();
  }

  void SetUp() override {
    ASSERT_FALSE(reference_.prompt_tokens.empty()) << "tests/fixtures/llama/reference.json is unreadable";
    generation_.max_new_tokens = 12;
  }

  // Opens the program with `allocator` and generates; the session is gone when it returns.
  Result<GenerationResult> generate_with(std::shared_ptr<IOBufferAllocator> allocator, bool strict = false) {
    auto opened = testing::open_test_session(path_, SessionOptions{std::move(allocator), strict});
    if (!opened.ok()) {
      return opened.status();
    }
    return generate_tokens(*opened->session, reference_.prompt_tokens, generation_);
  }

  std::vector<int32_t> heap_tokens() {
    auto heap = generate_with(std::make_shared<HeapAllocator>());
    EXPECT_TRUE(heap.ok()) << heap.status().to_string();
    return heap.ok() ? heap->tokens : std::vector<int32_t>{};
  }

  static std::shared_ptr<RpcmemAllocator> stub_rpcmem() {
    RpcmemAllocatorOptions options;
    options.library_path = STATICLM_RPCMEM_STUB;
    return std::make_shared<RpcmemAllocator>(options);
  }

  static inline testing::FixtureReference reference_;
  static inline std::string path_;
  GenerationOptions generation_;
};

// While a session is open: every tensor of both methods is bound to a block of `allocator`, and
// each cache's bytes, as the runtime left them, are visible through the binding's fd and offset.
void expect_every_tensor_shared(const SharedMemoryAllocator& allocator) {
  EXPECT_EQ(allocator.bindings().size(), 2u * 7u);
  bool some_cache_written = false;
  for (const char* method : {"prefill", "decode"}) {
    for (const char* name :
         {"input_ids", "cache_position", "logits", "k_cache_0", "v_cache_0", "k_cache_1", "v_cache_1"}) {
      auto binding = allocator.binding(method, name);
      ASSERT_TRUE(binding.ok()) << binding.status().to_string();
      auto info = allocator.lookup(binding->pointer);
      ASSERT_TRUE(info.ok());
      EXPECT_EQ(binding->fd, info->fd);
      EXPECT_EQ(binding->offset, info->offset);
      EXPECT_GE(info->size, binding->bytes);
      if (std::string(name).find("cache") == std::string::npos || std::string(name) == "cache_position") {
        continue;
      }
      testing::FdWindow window(binding->fd, binding->offset, binding->bytes);
      ASSERT_TRUE(window.ok()) << method << "/" << name;
      const auto* through_pointer = static_cast<const uint8_t*>(binding->pointer);
      EXPECT_EQ(std::memcmp(window.data(), through_pointer, binding->bytes), 0) << method << "/" << name;
      for (uint64_t i = 0; i < binding->bytes && !some_cache_written; ++i) {
        some_cache_written = window.data()[i] != 0;
      }
    }
  }
  EXPECT_TRUE(some_cache_written) << "generation left every KV cache zero";
}

TEST_F(SharedMemoryIoTest, TheHeapMatchesTheReference) {
  const std::vector<int32_t> tokens = heap_tokens();
  ASSERT_GE(reference_.greedy_tokens.size(), tokens.size());
  EXPECT_EQ(tokens,
            std::vector<int32_t>(reference_.greedy_tokens.begin(),
                                 reference_.greedy_tokens.begin() + static_cast<std::ptrdiff_t>(tokens.size())));
}

TEST_F(SharedMemoryIoTest, ShmGeneratesTheSameTokensWithEveryBufferShared) {
  const std::vector<int32_t> expected = heap_tokens();
  ShmAllocatorOptions options;
  options.backing = ShmBacking::kMemfd;
  auto created = ShmAllocator::create(options);
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  std::shared_ptr<ShmAllocator> shm = *created;
  {
    auto opened = testing::open_test_session(path_, SessionOptions{shm, true});
    ASSERT_TRUE(opened.ok()) << opened.status().to_string();
    auto result = generate_tokens(*opened->session, reference_.prompt_tokens, generation_);
    ASSERT_TRUE(result.ok()) << result.status().to_string();
    EXPECT_EQ(result->tokens, expected);
    ASSERT_EQ(result->io.per_allocator.size(), 1u);
    EXPECT_EQ(result->io.per_allocator[0].allocator, "shm:memfd");
    EXPECT_EQ(result->io.per_allocator[0].buffers, kBuffers);
    EXPECT_EQ(result->io.fallbacks, 0u);
    EXPECT_EQ(shm->stats().live_blocks, kBuffers);
    expect_every_tensor_shared(*shm);
  }
  EXPECT_EQ(shm->stats().live_blocks, 0u) << "closing the session freed every block";
  EXPECT_EQ(shm->stats().refused_frees, 0u);
}

TEST_F(SharedMemoryIoTest, RpcmemGeneratesTheSameTokensWithEveryBufferShared) {
  const std::vector<int32_t> expected = heap_tokens();
  StubControl stub;
  ASSERT_TRUE(stub.ok());
  std::shared_ptr<RpcmemAllocator> rpcmem = stub_rpcmem();
  ASSERT_TRUE(rpcmem->available()) << rpcmem->status().to_string();
  {
    auto opened = testing::open_test_session(path_, SessionOptions{rpcmem, true});
    ASSERT_TRUE(opened.ok()) << opened.status().to_string();
    auto result = generate_tokens(*opened->session, reference_.prompt_tokens, generation_);
    ASSERT_TRUE(result.ok()) << result.status().to_string();
    EXPECT_EQ(result->tokens, expected);
    ASSERT_EQ(result->io.per_allocator.size(), 1u);
    EXPECT_EQ(result->io.per_allocator[0].allocator, "rpcmem");
    EXPECT_EQ(result->io.per_allocator[0].buffers, kBuffers);
    EXPECT_EQ(result->io.fallbacks, 0u);
    EXPECT_EQ(stub.live_blocks(), static_cast<int>(kBuffers));
    expect_every_tensor_shared(*rpcmem);
  }
  EXPECT_EQ(stub.live_blocks(), 0);
}

TEST_F(SharedMemoryIoTest, AFailingRpcmemFallsBackToTheHeapWithTheSameTokens) {
  const std::vector<int32_t> expected = heap_tokens();
  StubControl stub;
  ASSERT_TRUE(stub.ok());
  std::shared_ptr<RpcmemAllocator> rpcmem = stub_rpcmem();
  stub.fail_every_alloc();
  testing::LogCapture logs;
  auto result = generate_with(rpcmem);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->tokens, expected);
  EXPECT_EQ(result->io.fallbacks, kBuffers);
  ASSERT_EQ(result->io.per_allocator.size(), 1u);
  EXPECT_EQ(result->io.per_allocator[0].allocator, "heap");
  EXPECT_EQ(rpcmem->stats().failed_allocations, kBuffers);
  EXPECT_EQ(logs.warnings_containing("allocator 'rpcmem' could not allocate"), 1) << "the fallback is said once:\n"
                                                                                  << logs.all();
  EXPECT_EQ(stub.live_blocks(), 0);
}

TEST_F(SharedMemoryIoTest, AMissingRpcmemLibraryFallsBackToTheHeapWithTheSameTokens) {
  const std::vector<int32_t> expected = heap_tokens();
  testing::LogCapture logs;
  RpcmemAllocatorOptions options;
  options.library_path = "/nonexistent/libcdsprpc.so";
  auto rpcmem = std::make_shared<RpcmemAllocator>(options);
  EXPECT_FALSE(rpcmem->available());
  auto result = generate_with(rpcmem);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(result->tokens, expected);
  EXPECT_EQ(result->io.fallbacks, kBuffers);
  EXPECT_EQ(logs.warnings_containing("/nonexistent/libcdsprpc.so not found"), 1) << logs.all();
}

TEST_F(SharedMemoryIoTest, StrictIoTurnsARpcmemFailureIntoAnError) {
  StubControl stub;
  ASSERT_TRUE(stub.ok());
  std::shared_ptr<RpcmemAllocator> rpcmem = stub_rpcmem();
  stub.fail_every_alloc();
  testing::LogCapture logs;
  auto result = generate_with(rpcmem, true);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(result.status().message().find("allocator 'rpcmem' could not allocate"), std::string::npos)
      << result.status().message();
  EXPECT_NE(result.status().message().find("strict I/O forbids the heap fallback"), std::string::npos);
  EXPECT_EQ(stub.live_blocks(), 0);
  EXPECT_EQ(rpcmem->stats().live_blocks, 0u);
}

}  // namespace
}  // namespace staticlm
