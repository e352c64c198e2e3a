// SPDX-License-Identifier: Apache-2.0
// Injected allocation failures. A session's I/O buffers come from an IOBufferAllocator through the
// IOManager; here an allocator fails its n-th allocate() or bind(), for every n that opening a
// session makes, and the real shared-memory allocators fail underneath (the stub libcdsprpc.so
// refusing its n-th rpcmem_alloc or rpcmem_to_fd). Every failure must end one of two ways: the
// buffer comes from the fallback and generation gives the same tokens, or the open fails with an
// error naming the allocator and the tensor. Either way every block is freed exactly once, and the
// same Program opens a clean session afterwards (nothing of the failed one is left behind).
#include <filesystem>
#include <memory>
#include <mutex>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/backends/cpu/export/cpu_backend.h"
#include "staticlm/backends/qnn/rpcmem/rpcmem_allocator.h"
#include "staticlm/backends/shm/shared_memory_test_util.h"
#include "staticlm/backends/shm/shm_allocator.h"
#include "staticlm/core/str_cat.h"
#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/llm/generator.h"

#include "fixture_reference.h"
#include "rpcmem_stub_control.h"
#include "session_helper.h"

namespace staticlm {
namespace {

// What one allocate() served: the tensor its buffer was first bound to.
struct Served {
  std::string method;
  std::string name;
  IoRole role = IoRole::kInput;
  uint64_t bytes = 0;
};

// Forwards to `inner`, except for the one allocate() or bind() call it is armed to fail; counts
// calls and tracks which pointers are live so a test can see leaks and foreign frees.
class FaultInjectingAllocator final : public IOBufferAllocator {
 public:
  FaultInjectingAllocator(std::string name, std::shared_ptr<IOBufferAllocator> inner)
      : name_(std::move(name)), inner_(std::move(inner)) {}

  // Fails only the n-th allocate() / bind() from now (1-based); 0 fails none. Resets the counts.
  void arm(int fail_allocate_at, int fail_bind_at) {
    std::lock_guard<std::mutex> lock(mutex_);
    fail_allocate_at_ = fail_allocate_at;
    fail_bind_at_ = fail_bind_at;
    allocate_calls_ = 0;
    bind_calls_ = 0;
    served_.clear();
  }

  std::string_view name() const override { return name_; }
  void* allocate(size_t bytes, size_t alignment) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (++allocate_calls_ == fail_allocate_at_) {
      return nullptr;
    }
    void* pointer = inner_->allocate(bytes, alignment);
    if (pointer != nullptr) {
      live_.insert(pointer);
      last_allocated_ = pointer;
    }
    return pointer;
  }
  Status bind(void* pointer, const IoTensorRef& tensor) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (pointer == last_allocated_) {
      served_.push_back({std::string(tensor.method), std::string(tensor.name), tensor.role, tensor.bytes});
      last_allocated_ = nullptr;
    }
    if (++bind_calls_ == fail_bind_at_) {
      return unavailable("injected failure of bind call ", bind_calls_);
    }
    return inner_->bind(pointer, tensor);
  }
  ExternalBuffer describe(void* pointer, uint64_t bytes) const override { return inner_->describe(pointer, bytes); }
  void free(void* pointer) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (live_.erase(pointer) == 0) {
      ++foreign_frees_;
      return;
    }
    inner_->free(pointer);
  }

  int allocate_calls() const { return locked(allocate_calls_); }
  int bind_calls() const { return locked(bind_calls_); }
  size_t live() const { return locked(live_.size()); }
  int foreign_frees() const { return locked(foreign_frees_); }
  // The tensors of the allocations since arm(), in call order (a failed one is absent).
  std::vector<Served> served() const { return locked(served_); }

 private:
  template <typename T>
  T locked(const T& value) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return value;
  }

  const std::string name_;
  const std::shared_ptr<IOBufferAllocator> inner_;
  mutable std::mutex mutex_;
  int fail_allocate_at_ = 0;
  int fail_bind_at_ = 0;
  int allocate_calls_ = 0;
  int bind_calls_ = 0;
  int foreign_frees_ = 0;
  std::set<void*> live_;
  void* last_allocated_ = nullptr;
  std::vector<Served> served_;
};

std::string describe(const Served& served) {
  return str_cat(served.bytes, " bytes for ", io_role_name(served.role), " '", served.name, "' of method '",
                 served.method, "'");
}

struct ProgramCase {
  std::string label;
  bool cpu_backend = false;
  KvUpdateForm kv_update = KvUpdateForm::kInPlace;
};

void PrintTo(const ProgramCase& program, std::ostream* out) {
  *out << program.label;
}

// One exported llama fixture program, prepared once; sessions are opened on it again and again.
class AllocationFailureTest : public ::testing::TestWithParam<ProgramCase> {
 protected:
  void SetUp() override {
    const ProgramCase& param = GetParam();
    reference_ = testing::load_fixture_reference("llama");
    ASSERT_FALSE(reference_.prompt_tokens.empty()) << "tests/fixtures/llama/reference.json is unreadable";
    const std::string path =
        (std::filesystem::path(::testing::TempDir()) / ("allocation_failure_" + param.label + ".slm")).string();
    HfStaticExportOptions options;
    options.prefill_len = 8;
    options.max_cache_len = 64;
    options.kv_update = param.kv_update;
    std::shared_ptr<CpuBackend> cpu;
    if (param.cpu_backend) {
      auto created = CpuBackend::create();
      ASSERT_TRUE(created.ok()) << created.status().to_string();
      cpu = *created;
      options.backend = cpu.get();
    }
    auto exported = export_hf_static(testing::fixture_dir("llama"), path, options);
    ASSERT_TRUE(exported.ok()) << exported.status().to_string();
    auto opened = testing::open_test_session(path);
    ASSERT_TRUE(opened.ok()) << opened.status().to_string();
    test_session_ = std::move(*opened);
    auto contract = test_session_.contracts->select(test_session_.program->file());
    ASSERT_TRUE(contract.ok()) << contract.status().to_string();
    contract_ = *contract;
    generation_.max_new_tokens = 6;
    auto expected = generate_tokens(*test_session_.session, reference_.prompt_tokens, generation_);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    expected_ = expected->tokens;
    test_session_.session.reset();
  }

  Result<std::unique_ptr<LlmSession>> open(SessionOptions options) const {
    return contract_->open(test_session_.program, options);
  }

  // The buffers a clean open allocates, in order, and how many bind() calls it makes.
  std::pair<std::vector<Served>, int> clean_open_calls(const std::shared_ptr<FaultInjectingAllocator>& allocator) {
    allocator->arm(0, 0);
    auto session = open(SessionOptions{allocator, true});
    EXPECT_TRUE(session.ok()) << session.status().to_string();
    return {allocator->served(), allocator->bind_calls()};
  }

  // A session opened with `options` right now generates the expected tokens.
  void expect_clean_generation(const SessionOptions& options, const std::string& context) {
    auto session = open(options);
    ASSERT_TRUE(session.ok()) << context << ": " << session.status().to_string();
    auto result = generate_tokens(**session, reference_.prompt_tokens, generation_);
    ASSERT_TRUE(result.ok()) << context << ": " << result.status().to_string();
    EXPECT_EQ(result->tokens, expected_) << context;
  }

  static std::shared_ptr<FaultInjectingAllocator> faulty(std::string name = "faulty") {
    return std::make_shared<FaultInjectingAllocator>(std::move(name), std::make_shared<HeapAllocator>());
  }

  testing::FixtureReference reference_;
  testing::TestSession test_session_;
  const LlmContract* contract_ = nullptr;
  GenerationOptions generation_;
  std::vector<int32_t> expected_;
  testing::LogCapture logs_;  // the fallback warnings stay out of the test output
};

TEST_P(AllocationFailureTest, ACleanOpenAllocatesEveryBufferOnceAndFreesItOnClose) {
  auto allocator = faulty();
  auto [served, binds] = clean_open_calls(allocator);
  EXPECT_EQ(allocator->live(), 0u);
  EXPECT_EQ(allocator->foreign_frees(), 0);
  ASSERT_FALSE(served.empty());
  EXPECT_EQ(static_cast<int>(served.size()), allocator->allocate_calls()) << "one allocate() per buffer";
  EXPECT_GT(binds, static_cast<int>(served.size())) << "each cache is bound to both methods";
}

TEST_P(AllocationFailureTest, EveryFailedAllocationFallsBackAndGivesTheSameTokens) {
  auto allocator = faulty();
  const std::vector<Served> served = clean_open_calls(allocator).first;
  for (size_t n = 1; n <= served.size(); ++n) {
    const std::string context = "allocation " + std::to_string(n) + ": " + describe(served[n - 1]);
    allocator->arm(static_cast<int>(n), 0);
    {
      auto session = open(SessionOptions{allocator, false});
      ASSERT_TRUE(session.ok()) << context << ": " << session.status().to_string();
      auto result = generate_tokens(**session, reference_.prompt_tokens, generation_);
      ASSERT_TRUE(result.ok()) << context << ": " << result.status().to_string();
      EXPECT_EQ(result->tokens, expected_) << context;
      EXPECT_EQ(result->io.fallbacks, 1u) << context;
      EXPECT_EQ(result->io.fallback_bytes, served[n - 1].bytes) << context;
      EXPECT_EQ(allocator->live(), served.size() - 1) << context;
    }
    EXPECT_EQ(allocator->live(), 0u) << context << ": closing freed every block";
  }
  EXPECT_EQ(allocator->foreign_frees(), 0);
}

TEST_P(AllocationFailureTest, StrictIoRefusesEveryFailedAllocationAndFreesWhatItHad) {
  auto allocator = faulty();
  const std::vector<Served> served = clean_open_calls(allocator).first;
  for (size_t n = 1; n <= served.size(); ++n) {
    const std::string context = "allocation " + std::to_string(n);
    allocator->arm(static_cast<int>(n), 0);
    auto session = open(SessionOptions{allocator, true});
    ASSERT_FALSE(session.ok()) << context;
    EXPECT_EQ(session.status().code(), StatusCode::kFailedPrecondition) << context;
    EXPECT_NE(session.status().message().find("allocator 'faulty' could not allocate " + describe(served[n - 1]) +
                                              ", and strict I/O forbids the heap fallback"),
              std::string::npos)
        << context << ": " << session.status().message();
    EXPECT_EQ(allocator->allocate_calls(), static_cast<int>(n)) << context << ": the open stopped at the failure";
    EXPECT_EQ(allocator->live(), 0u) << context << ": the failed open freed what it had";
  }
  EXPECT_EQ(allocator->foreign_frees(), 0);
  allocator->arm(0, 0);
  expect_clean_generation(SessionOptions{allocator, true}, "after every refused open");
}

TEST_P(AllocationFailureTest, AFallbackThatFailsTooIsResourceExhaustedNamingTheTensor) {
  auto allocator = faulty();
  auto fallback = faulty("faulty-fallback");
  const std::vector<Served> served = clean_open_calls(allocator).first;
  for (size_t n = 1; n <= served.size(); ++n) {
    const std::string context = "allocation " + std::to_string(n);
    allocator->arm(static_cast<int>(n), 0);
    fallback->arm(1, 0);
    auto session = open(SessionOptions{allocator, false, fallback});
    ASSERT_FALSE(session.ok()) << context;
    EXPECT_EQ(session.status().code(), StatusCode::kResourceExhausted) << context;
    EXPECT_NE(session.status().message().find("cannot allocate " + describe(served[n - 1]) +
                                              ": allocator 'faulty-fallback' returned nothing"),
              std::string::npos)
        << context << ": " << session.status().message();
    EXPECT_EQ(fallback->allocate_calls(), 1) << context;
    EXPECT_EQ(allocator->live(), 0u) << context;
    EXPECT_EQ(fallback->live(), 0u) << context;
  }
  // A fallback that works serves exactly the buffer the allocator refused.
  allocator->arm(2, 0);
  fallback->arm(0, 0);
  {
    auto session = open(SessionOptions{allocator, false, fallback});
    ASSERT_TRUE(session.ok()) << session.status().to_string();
    EXPECT_EQ(fallback->live(), 1u);
    EXPECT_EQ((*session)->io_stats().fallbacks, 1u);
  }
  EXPECT_EQ(fallback->live(), 0u);
  EXPECT_EQ(allocator->foreign_frees() + fallback->foreign_frees(), 0);
}

TEST_P(AllocationFailureTest, EveryFailedBindIsAnErrorNamingTheAllocatorAndTheTensor) {
  auto allocator = faulty();
  const int binds = clean_open_calls(allocator).second;
  ASSERT_GT(binds, 0);
  for (int n = 1; n <= binds; ++n) {
    const std::string context = "bind " + std::to_string(n);
    allocator->arm(0, n);
    auto session = open(SessionOptions{allocator, true});
    ASSERT_FALSE(session.ok()) << context;
    EXPECT_EQ(session.status().code(), StatusCode::kUnavailable) << context;
    const std::string& message = session.status().message();
    EXPECT_NE(message.find("injected failure of bind call " + std::to_string(n)), std::string::npos)
        << context << ": " << message;
    EXPECT_NE(message.find("allocator 'faulty' binding"), std::string::npos) << context << ": " << message;
    EXPECT_EQ(allocator->bind_calls(), n) << context << ": the open stopped at the failure";
    EXPECT_EQ(allocator->live(), 0u) << context;
  }
  EXPECT_EQ(allocator->foreign_frees(), 0);
  allocator->arm(0, 0);
  expect_clean_generation(SessionOptions{allocator, true}, "after every failed bind");
}

// Shared memory underneath: the n-th block the kernel or the DSP library refuses.
TEST_P(AllocationFailureTest, ShmBlocksAreAllFreedWhenTheNthAllocationFails) {
  ShmAllocatorOptions shm_options;
  shm_options.backing = ShmBacking::kMemfd;
  auto created = ShmAllocator::create(shm_options);
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  std::shared_ptr<ShmAllocator> shm = *created;
  auto allocator = std::make_shared<FaultInjectingAllocator>("faulty", shm);
  const size_t buffers = clean_open_calls(allocator).first.size();
  for (size_t n = 1; n <= buffers; ++n) {
    const std::string context = "allocation " + std::to_string(n);
    allocator->arm(static_cast<int>(n), 0);
    EXPECT_FALSE(open(SessionOptions{allocator, true}).ok()) << context;
    EXPECT_EQ(shm->stats().live_blocks, 0u) << context;
    allocator->arm(static_cast<int>(n), 0);
    {
      auto session = open(SessionOptions{allocator, false});
      ASSERT_TRUE(session.ok()) << context << ": " << session.status().to_string();
      EXPECT_EQ(shm->stats().live_blocks, buffers - 1) << context;
    }
    EXPECT_EQ(shm->stats().live_blocks, 0u) << context;
  }
  EXPECT_EQ(shm->stats().refused_frees, 0u);
}

TEST_P(AllocationFailureTest, EachRefusedRpcmemAllocOrFdFallsBackAndLeavesNoBlock) {
  testing::StubControl stub;
  ASSERT_TRUE(stub.ok());
  RpcmemAllocatorOptions rpcmem_options;
  rpcmem_options.library_path = STATICLM_RPCMEM_STUB;
  auto probe = std::make_shared<FaultInjectingAllocator>("faulty", std::make_shared<RpcmemAllocator>(rpcmem_options));
  const size_t buffers = clean_open_calls(probe).first.size();
  for (bool to_fd : {false, true}) {
    for (size_t n = 1; n <= buffers; ++n) {
      const std::string context = std::string(to_fd ? "rpcmem_to_fd " : "rpcmem_alloc ") + std::to_string(n);
      auto rpcmem = std::make_shared<RpcmemAllocator>(rpcmem_options);
      ASSERT_TRUE(rpcmem->available()) << rpcmem->status().to_string();
      (to_fd ? stub.fail_to_fd_at(static_cast<int>(n)) : stub.fail_alloc_at(static_cast<int>(n)));
      {
        auto session = open(SessionOptions{rpcmem, false});
        ASSERT_TRUE(session.ok()) << context << ": " << session.status().to_string();
        auto result = generate_tokens(**session, reference_.prompt_tokens, generation_);
        ASSERT_TRUE(result.ok()) << context << ": " << result.status().to_string();
        EXPECT_EQ(result->tokens, expected_) << context;
        EXPECT_EQ(result->io.fallbacks, 1u) << context;
        EXPECT_EQ(rpcmem->stats().failed_allocations, 1u) << context;
        EXPECT_EQ(stub.live_blocks(), static_cast<int>(buffers - 1)) << context;
      }
      EXPECT_EQ(stub.live_blocks(), 0) << context;
      (to_fd ? stub.fail_to_fd_at(static_cast<int>(n)) : stub.fail_alloc_at(static_cast<int>(n)));
      auto refused = open(SessionOptions{rpcmem, true});
      ASSERT_FALSE(refused.ok()) << context;
      EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition) << context;
      EXPECT_EQ(stub.live_blocks(), 0) << context;
    }
  }
  EXPECT_EQ(stub.bad_frees(), 0);
}

INSTANTIATE_TEST_SUITE_P(Programs, AllocationFailureTest,
                         ::testing::Values(ProgramCase{"portable", false, KvUpdateForm::kInPlace},
                                           ProgramCase{"portable_returned_kv", false, KvUpdateForm::kReturned},
                                           ProgramCase{"cpu", true, KvUpdateForm::kInPlace}),
                         [](const ::testing::TestParamInfo<ProgramCase>& program) { return program.param.label; });

}  // namespace
}  // namespace staticlm
