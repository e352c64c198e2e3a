// SPDX-License-Identifier: Apache-2.0
// Buffer identity reaches the backend: with every I/O buffer in shared memory (shm's memfd, the
// stub rpcmem), the delegate is handed each bound tensor's fd, offset and size once at bind time,
// maps the fd itself, and sees the very bytes the runner wrote (inputs) and the runner reads what
// it wrote (outputs, caches) — zero-copy checked from the backend's side, not assumed. Heap
// buffers arrive as plain host memory.
#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "staticlm/backends/qnn/rpcmem/rpcmem_allocator.h"
#include "staticlm/backends/shm/shm_allocator.h"
#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/llm/generator.h"

#include "export_helpers.h"
#include "fixture_reference.h"
#include "probe_backend.h"
#include "session_helper.h"

namespace staticlm {
namespace {

// Per method: input_ids, cache_position, logits and (2 layers) k / v caches.
constexpr size_t kTensorsPerMethod = 7;

class BufferIdentityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    reference_ = testing::load_fixture_reference("llama");
    path_ = testing::temp_path("llama_fd_probe.slm");
    testing::ProbeBackend backend;
    HfStaticExportOptions options = testing::small_options();
    options.backend = &backend;
    options.no_fallback = true;
    auto summary = export_hf_static(testing::fixture_dir("llama"), path_, options);
    ASSERT_TRUE(summary.ok()) << summary.status().to_string();
  }

  // Generates 12 tokens with every buffer from `allocator`; returns the probe's record.
  testing::ProbeStats generate_with(std::shared_ptr<IOBufferAllocator> allocator, std::vector<int32_t>* tokens) {
    auto log = std::make_shared<testing::ProbeLog>();
    auto runtimes = std::make_shared<testing::TestRuntimes>(
        std::vector<std::shared_ptr<const BackendRuntime>>{testing::make_probe_runtime(log)});
    auto opened = testing::open_test_session(path_, SessionOptions{std::move(allocator), true}, runtimes);
    EXPECT_TRUE(opened.ok()) << opened.status().to_string();
    if (!opened.ok()) return {};
    GenerationOptions generation;
    generation.max_new_tokens = 12;
    auto result = generate_tokens(*opened->session, reference_.prompt_tokens, generation);
    EXPECT_TRUE(result.ok()) << result.status().to_string();
    if (result.ok()) *tokens = result->tokens;
    return log->stats();
  }

  static void expect_fd_backed(const testing::ProbeStats& stats, ExternalBufferType type) {
    EXPECT_EQ(stats.bindings.size(), 2 * kTensorsPerMethod) << "each tensor of both methods, bound once";
    std::set<std::string> tensors;
    for (const testing::ProbeBinding& binding : stats.bindings) {
      EXPECT_EQ(binding.type, type) << binding.tensor;
      EXPECT_GE(binding.fd, 0) << binding.tensor;
      EXPECT_GT(binding.size, 0u) << binding.tensor;
      tensors.insert(binding.tensor);
    }
    EXPECT_EQ(tensors.size(), kTensorsPerMethod);
    EXPECT_EQ(stats.fds_mapped, 2 * kTensorsPerMethod);
    EXPECT_GT(stats.views_checked, 0u);
    EXPECT_GT(stats.nonzero_bytes_seen, 0u) << "the checks compared real data, not zeros";
    EXPECT_EQ(stats.pointer_mismatches, 0u) << "a delegate got a copy instead of the bound buffer";
    EXPECT_EQ(stats.byte_mismatches, 0u) << "the fd does not hold what the pointer holds";
  }

  static inline testing::FixtureReference reference_;
  static inline std::string path_;
};

TEST_F(BufferIdentityTest, HeapBuffersArriveAsHostMemory) {
  std::vector<int32_t> tokens;
  const testing::ProbeStats stats = generate_with(std::make_shared<HeapAllocator>(), &tokens);
  EXPECT_EQ(tokens, std::vector<int32_t>(reference_.greedy_tokens.begin(), reference_.greedy_tokens.begin() + 12));
  EXPECT_EQ(stats.bindings.size(), 2 * kTensorsPerMethod);
  for (const testing::ProbeBinding& binding : stats.bindings) {
    EXPECT_EQ(binding.type, ExternalBufferType::kHostAllocation) << binding.tensor;
    EXPECT_EQ(binding.fd, -1);
    EXPECT_EQ(binding.allocator, "heap");
  }
  EXPECT_EQ(stats.fds_mapped, 0u);
}

TEST_F(BufferIdentityTest, ShmBuffersReachTheDelegateWithTheirFds) {
  std::vector<int32_t> heap_tokens;
  generate_with(std::make_shared<HeapAllocator>(), &heap_tokens);
  ShmAllocatorOptions options;
  options.backing = ShmBacking::kMemfd;
  auto shm = ShmAllocator::create(options);
  ASSERT_TRUE(shm.ok()) << shm.status().to_string();
  std::vector<int32_t> tokens;
  const testing::ProbeStats stats = generate_with(*shm, &tokens);
  EXPECT_EQ(tokens, heap_tokens);
  expect_fd_backed(stats, ExternalBufferType::kMemfd);
  EXPECT_EQ(stats.bindings[0].allocator, "shm:memfd");
}

TEST_F(BufferIdentityTest, RpcmemBuffersReachTheDelegateWithTheirFds) {
  std::vector<int32_t> heap_tokens;
  generate_with(std::make_shared<HeapAllocator>(), &heap_tokens);
  RpcmemAllocatorOptions options;
  options.library_path = STATICLM_RPCMEM_STUB;
  auto rpcmem = std::make_shared<RpcmemAllocator>(options);
  ASSERT_TRUE(rpcmem->available()) << rpcmem->status().to_string();
  std::vector<int32_t> tokens;
  const testing::ProbeStats stats = generate_with(rpcmem, &tokens);
  EXPECT_EQ(tokens, heap_tokens);
  expect_fd_backed(stats, ExternalBufferType::kRpcmem);
  EXPECT_EQ(stats.bindings[0].allocator, "rpcmem");
}

}  // namespace
}  // namespace staticlm
