// SPDX-License-Identifier: Apache-2.0
// The server's session pool over a real program: a bounded queue, the free session with the
// longest cached prefix chosen for a prompt, and a waiter that gives up leaving the queue.
#include "staticlm/server/session_pool.h"

#include <thread>

#include <gtest/gtest.h>

#include "staticlm/builtin/builtin_runtime.h"
#include "staticlm/exporter/hf_static_export.h"

#include "export_helpers.h"
#include "fixture_reference.h"

namespace staticlm::server {
namespace {

std::unique_ptr<Engine> open_fixture() {
  const std::string path = testing::temp_path("session_pool.slm");
  EXPECT_TRUE(export_hf_static(testing::fixture_dir("llama"), path, testing::small_options()).ok());
  auto runtime = builtin_engine_runtime();
  auto engine = Engine::open(path, {}, std::move(*runtime));
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  return std::move(*engine);
}

TEST(SessionPoolTest, TheQueueIsBounded) {
  auto engine = open_fixture();
  auto pool = SessionPool::create(*engine, 2, 1);
  ASSERT_TRUE(pool.ok()) << pool.status().to_string();
  auto first = (*pool)->enqueue();
  auto second = (*pool)->enqueue();
  auto third = (*pool)->enqueue();
  ASSERT_TRUE(first.ok() && second.ok() && third.ok());
  EXPECT_EQ((*pool)->queued(), 1) << "two tickets take the free sessions, one waits";
  auto fourth = (*pool)->enqueue();
  ASSERT_FALSE(fourth.ok());
  EXPECT_EQ(fourth.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(fourth.status().message().find("retry shortly"), std::string::npos);
  { auto dropped = std::move(*third); }
  EXPECT_EQ((*pool)->queued(), 0) << "a ticket dropped before its turn leaves the queue";
  EXPECT_TRUE((*pool)->enqueue().ok());
  EXPECT_FALSE(SessionPool::create(*engine, 0, 1).ok());
}

TEST(SessionPoolTest, APromptGoesToTheSessionThatCachedItsStart) {
  auto engine = open_fixture();
  auto pool = SessionPool::create(*engine, 2, 4);
  ASSERT_TRUE(pool.ok());
  const std::vector<int32_t> story = {5, 6, 7, 8, 9, 10};
  const std::vector<int32_t> other = {20, 21, 22};
  auto stay = [] { return true; };
  GenerationOptions options = engine->default_generation();
  options.eos_ids.clear();
  options.max_new_tokens = 2;
  options.reuse_cached_prefix = true;
  LlmSession* story_session = nullptr;
  {
    auto a = (*pool)->acquire((*pool)->enqueue().value(), story, stay, 0.05);
    auto b = (*pool)->acquire((*pool)->enqueue().value(), other, stay, 0.05);
    ASSERT_TRUE(a && b);
    ASSERT_TRUE(generate_tokens(a->session(), story, options).ok());
    ASSERT_TRUE(generate_tokens(b->session(), other, options).ok());
    story_session = &a->session();
    EXPECT_EQ((*pool)->busy(), 2);
  }
  EXPECT_EQ((*pool)->busy(), 0);
  std::vector<int32_t> continued = story;
  continued.push_back(11);
  auto lease = (*pool)->acquire((*pool)->enqueue().value(), continued, stay, 0.05);
  ASSERT_TRUE(lease);
  EXPECT_EQ(&lease->session(), story_session);
}

TEST(SessionPoolTest, AWaiterWhoseClientLeftGivesUp) {
  auto engine = open_fixture();
  auto pool = SessionPool::create(*engine, 1, 2);
  ASSERT_TRUE(pool.ok());
  auto held = (*pool)->acquire((*pool)->enqueue().value(), {}, [] { return true; }, 0.05);
  ASSERT_TRUE(held);
  int asked = 0;
  auto gave_up = (*pool)->acquire((*pool)->enqueue().value(), {}, [&] { return ++asked < 3; }, 0.01);
  EXPECT_FALSE(gave_up.has_value());
  EXPECT_EQ(asked, 3);
  EXPECT_EQ((*pool)->queued(), 0);
}

// Requests from several threads share two sessions; each gets the tokens a lone session gives it,
// whichever session served it and whatever it had cached (the tsan preset runs this).
TEST(SessionPoolTest, ThreadsSharingThePoolGetTheirOwnResults) {
  auto engine = open_fixture();
  auto pool = SessionPool::create(*engine, 2, 8);
  ASSERT_TRUE(pool.ok());
  GenerationOptions options = engine->default_generation();
  options.eos_ids.clear();
  options.max_new_tokens = 3;
  options.reuse_cached_prefix = true;
  const std::vector<std::vector<int32_t>> prompts = {{5, 6, 7}, {5, 6, 8, 9}, {30, 31}, {5, 6, 7, 40}};
  std::vector<std::vector<int32_t>> expected;
  auto lone = engine->new_session();
  ASSERT_TRUE(lone.ok());
  for (const auto& prompt : prompts) {
    expected.push_back(generate_tokens(**lone, prompt, options).value().tokens);
  }
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 6; ++round) {
        const size_t which = static_cast<size_t>(t + round) % prompts.size();
        auto ticket = (*pool)->enqueue();
        if (!ticket.ok()) {
          ++mismatches;
          continue;
        }
        auto lease = (*pool)->acquire(
            std::move(*ticket), prompts[which], [] { return true; }, 0.01);
        auto result = generate_tokens(lease->session(), prompts[which], options);
        if (!result.ok() || result->tokens != expected[which]) {
          ++mismatches;
        }
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ((*pool)->busy(), 0);
  EXPECT_EQ((*pool)->queued(), 0);
}

TEST(SessionPoolTest, ASlotActionTakesItsSessionOnlyWhenIdleAndHoldsItFromRequests) {
  auto engine = open_fixture();
  auto pool = SessionPool::create(*engine, 2, 4);
  ASSERT_TRUE(pool.ok());
  EXPECT_FALSE((*pool)->try_acquire_slot(2)) << "no such slot";
  auto request = (*pool)->acquire((*pool)->enqueue().value(), std::vector<int32_t>{5}, [] { return true; }, 0.01);
  ASSERT_TRUE(request);
  const std::vector<bool> in_use = (*pool)->slots_in_use();
  const size_t busy_slot = in_use[0] ? 0 : 1;
  EXPECT_FALSE((*pool)->try_acquire_slot(busy_slot)) << "a generating slot is never handed to an action";
  {
    auto action = (*pool)->try_acquire_slot(1 - busy_slot);
    ASSERT_TRUE(action);
    EXPECT_EQ((*pool)->busy(), 2);
    EXPECT_FALSE((*pool)->try_acquire_slot(1 - busy_slot)) << "nor to a second action";
    // A request waiting meanwhile gets no session until one is released.
    auto ticket = (*pool)->enqueue();
    ASSERT_TRUE(ticket.ok());
    int polls = 0;
    auto gave_up = (*pool)->acquire(
        std::move(*ticket), std::vector<int32_t>{5}, [&] { return ++polls < 2; }, 0.01);
    EXPECT_FALSE(gave_up);
  }
  EXPECT_EQ((*pool)->busy(), 1) << "the action's lease returned its session";
  EXPECT_TRUE((*pool)->try_acquire_slot(1 - busy_slot));
}

}  // namespace
}  // namespace staticlm::server
