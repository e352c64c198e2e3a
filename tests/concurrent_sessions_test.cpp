// SPDX-License-Identifier: Apache-2.0
// Prepared program vs session: one Program is loaded, verified and has its delegates initialised
// once; four sessions, each with its own caches, arenas and bindings, then generate in parallel
// threads on it and get exactly the tokens they get one after another. Runs under ThreadSanitizer
// in the tsan preset (scripts/test).
#include <thread>

#include <gtest/gtest.h>

#include "staticlm/backends/cpu/export/cpu_backend.h"
#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/llm/generator.h"

#include "export_helpers.h"
#include "fixture_reference.h"
#include "session_helper.h"

namespace staticlm {
namespace {

constexpr int kSessions = 4;

// Prompt i: the reference prompt with its first i tokens dropped, so every session differs.
std::vector<int32_t> prompt_for(const testing::FixtureReference& ref, int session) {
  return std::vector<int32_t>(ref.prompt_tokens.begin() + session, ref.prompt_tokens.end());
}

class ConcurrentSessionsTest : public ::testing::TestWithParam<bool> {};

TEST_P(ConcurrentSessionsTest, ParallelSessionsOnOneProgramMatchSequentialRuns) {
  const bool delegated = GetParam();
  const testing::FixtureReference ref = testing::load_fixture_reference("qwen3");
  ASSERT_FALSE(ref.prompt_tokens.empty());
  auto backend = CpuBackend::create();
  ASSERT_TRUE(backend.ok());
  HfStaticExportOptions options = testing::small_options();
  if (delegated) options.backend = backend->get();
  const std::string path = testing::temp_path(delegated ? "qwen3_sessions_cpu.slm" : "qwen3_sessions.slm");
  ASSERT_TRUE(export_hf_static(ref.dir, path, options).ok());

  auto first = testing::open_test_session(path);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  const std::shared_ptr<const Program> program = first->program;
  auto contracts = std::make_unique<ContractRegistry>();
  ASSERT_TRUE(register_builtin_contracts(*contracts).ok());
  const LlmContract* contract = *contracts->select(program->file());

  GenerationOptions generation;
  generation.max_new_tokens = 10;
  std::vector<std::vector<int32_t>> sequential(kSessions);
  for (int s = 0; s < kSessions; ++s) {
    auto session = contract->open(program, {});
    ASSERT_TRUE(session.ok()) << session.status().to_string();
    auto result = generate_tokens(**session, prompt_for(ref, s), generation);
    ASSERT_TRUE(result.ok()) << result.status().to_string();
    sequential[s] = result->tokens;
  }
  EXPECT_NE(sequential[0], sequential[1]) << "the prompts should lead to different continuations";

  std::vector<std::vector<int32_t>> parallel(kSessions);
  std::vector<Status> statuses(kSessions);
  std::vector<std::thread> threads;
  for (int s = 0; s < kSessions; ++s) {
    threads.emplace_back([&, s] {
      auto session = contract->open(program, {});
      if (!session.ok()) {
        statuses[s] = session.status();
        return;
      }
      // Twice per thread: a session is reused after reset, as a server would.
      for (int round = 0; round < 2; ++round) {
        auto result = generate_tokens(**session, prompt_for(ref, s), generation);
        if (!result.ok()) {
          statuses[s] = result.status();
          return;
        }
        parallel[s] = result->tokens;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int s = 0; s < kSessions; ++s) {
    EXPECT_TRUE(statuses[s].ok()) << statuses[s].to_string();
    EXPECT_EQ(parallel[s], sequential[s]) << "session " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Programs, ConcurrentSessionsTest, ::testing::Values(false, true),
                         [](const auto& test_info) { return test_info.param ? "CpuDelegated" : "Portable"; });

}  // namespace
}  // namespace staticlm
