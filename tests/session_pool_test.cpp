// The server's session pool over a real program: a bounded queue, the free session with the
// longest cached prefix chosen for a prompt, and a waiter that gives up leaving the queue.
#include "staticlm/server/session_pool.h"

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

}  // namespace
}  // namespace staticlm::server
