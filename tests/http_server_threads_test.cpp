// SPDX-License-Identifier: Apache-2.0
// The HTTP server in process, with client threads at once: /health polled while the model is
// being set, concurrent completions (streamed and not) that must equal the sequential answers,
// clients that leave mid-stream, and stop() while replies are in flight. The tsan preset runs it,
// so what the server's threads share (the session pool, the metrics, the model handed over by
// set_model, shutdown) is checked for races. cpp-httplib is Debian's prebuilt library: TSan sees
// its threads and locks (pthread calls) but not its own memory accesses.
#include <httplib.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "staticlm/builtin/builtin_runtime.h"
#include "staticlm/chat/program_chat_template.h"
#include "staticlm/exporter/hf_static_export.h"
#include "staticlm/server/http_server.h"

#include "export_helpers.h"
#include "fixture_reference.h"

namespace staticlm::server {
namespace {

using Json = nlohmann::json;

constexpr const char* kCompletions = "/v1/completions";

std::string completion_body(const std::string& prompt, int max_tokens, bool stream) {
  return Json{{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}, {"stream", stream}}.dump();
}

// The text of a completion: the reply's choices[0].text, or the streamed events' texts joined.
// Empty with `error` set when the reply is not what a good request gets.
struct Reply {
  int status = 0;
  std::string text;
  std::string error;
};

Reply parse_reply(int status, const std::string& body, bool stream) {
  Reply reply{status, "", ""};
  if (status != 200) {
    reply.error = "status " + std::to_string(status) + ": " + body;
    return reply;
  }
  if (!stream) {
    Json parsed = Json::parse(body, nullptr, false);
    if (parsed.is_discarded() || !parsed.contains("choices")) {
      reply.error = "not a completion: " + body;
    } else {
      reply.text = parsed["choices"][0]["text"].get<std::string>();
    }
    return reply;
  }
  bool done = false;
  size_t start = 0;
  while (start < body.size()) {
    size_t end = body.find('\n', start);
    end = end == std::string::npos ? body.size() : end;
    const std::string line = body.substr(start, end - start);
    start = end + 1;
    if (line.rfind("data: ", 0) != 0) {
      continue;  // blank separators and keep-alive comments
    }
    const std::string data = line.substr(6);
    if (data == "[DONE]") {
      done = true;
      continue;
    }
    Json event = Json::parse(data, nullptr, false);
    if (event.is_discarded()) {
      reply.error = "bad event: " + data;
      return reply;
    }
    if (!event["choices"].empty()) {
      reply.text += event["choices"][0]["text"].get<std::string>();
    }
  }
  if (!done) {
    reply.error = "the stream did not end with [DONE]: " + body;
  }
  return reply;
}

class HttpServerThreadsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = testing::temp_path("http_server_threads.slm");
    auto exported = export_hf_static(testing::fixture_dir("llama"), path_, testing::small_options());
    ASSERT_TRUE(exported.ok()) << exported.status().to_string();
  }

  void SetUp() override {
    ServerOptions options;
    options.port = 0;
    options.parallel = 2;
    options.queue = 16;
    options.model_name = "fixture";
    options.client_check_seconds = 0.02;
    auto created = Server::create(options);
    ASSERT_TRUE(created.ok()) << created.status().to_string();
    server_ = std::move(*created);
    ASSERT_TRUE(server_->bind().ok());
    listener_ = std::thread([this] { listen_status_ = server_->listen(); });
  }

  void TearDown() override {
    if (server_) {
      server_->stop();
    }
    if (listener_.joinable()) {
      listener_.join();
    }
    EXPECT_TRUE(listen_status_.ok()) << listen_status_.to_string();
  }

  void set_model() {
    auto runtime = builtin_engine_runtime();
    ASSERT_TRUE(runtime.ok()) << runtime.status().to_string();
    auto engine = Engine::open(path_, {}, std::move(*runtime));
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    auto tokenizer = (*engine)->tokenizer();
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
    auto chat = load_program_chat_template((*engine)->file(), **tokenizer, "");
    ASSERT_TRUE(chat.ok()) << chat.status().to_string();
    ASSERT_TRUE(server_->set_model(std::move(*engine), std::move(*chat)).ok());
  }

  httplib::Client client() const {
    httplib::Client http("127.0.0.1", server_->port());
    http.set_read_timeout(60, 0);
    return http;
  }

  Reply complete(const std::string& prompt, int max_tokens, bool stream) const {
    httplib::Client http = client();
    auto result = http.Post(kCompletions, completion_body(prompt, max_tokens, stream), "application/json");
    if (!result) {
      return Reply{0, "", "no reply: " + httplib::to_string(result.error())};
    }
    return parse_reply(result->status, result->body, stream);
  }

  static inline std::string path_;
  std::unique_ptr<Server> server_;
  std::thread listener_;
  Status listen_status_;
};

TEST_F(HttpServerThreadsTest, HealthTurnsReadyWhileClientsPollIt) {
  constexpr int kPollers = 2;
  std::atomic<bool> stop{false};
  std::atomic<int> unavailable[kPollers] = {0, 0};
  std::atomic<int> ready[kPollers] = {0, 0};
  std::atomic<int> other{0};
  std::vector<std::thread> pollers;
  for (int i = 0; i < kPollers; ++i) {
    pollers.emplace_back([&, i] {
      httplib::Client http = client();
      while (!stop.load()) {
        auto result = http.Get(i == 0 ? "/health" : "/v1/models");
        const int status = result ? result->status : 0;
        (status == 503 ? unavailable[i] : status == 200 ? ready[i] : other).fetch_add(1);
        if (status == 200) {
          break;
        }
      }
    });
  }
  auto all_at_least_one = [](const std::atomic<int>* counts) { return counts[0].load() > 0 && counts[1].load() > 0; };
  // Each poller is told 503 before the model arrives (bounded: a server that never answers
  // fails here instead of hanging).
  for (int spin = 0; spin < 30000 && !all_at_least_one(unavailable); ++spin) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(all_at_least_one(unavailable)) << "before the model is set, /health and /v1/models answer 503";
  set_model();
  for (int spin = 0; spin < 30000 && !all_at_least_one(ready); ++spin) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  stop = true;
  for (std::thread& poller : pollers) {
    poller.join();
  }
  EXPECT_TRUE(all_at_least_one(ready)) << "both pollers saw the model become ready";
  EXPECT_EQ(other.load(), 0);
}

TEST_F(HttpServerThreadsTest, ConcurrentClientsGetTheSequentialAnswers) {
  set_model();
  const std::vector<std::string> prompts = {"In the beginning", "And God said", "Blessed are", "Let there be"};
  std::vector<std::string> expected;
  for (const std::string& prompt : prompts) {
    Reply reply = complete(prompt, 5, false);
    ASSERT_TRUE(reply.error.empty()) << reply.error;
    expected.push_back(reply.text);
  }
  std::vector<std::vector<std::string>> failures(4);
  std::vector<std::thread> clients;
  for (size_t c = 0; c < failures.size(); ++c) {
    clients.emplace_back([&, c] {
      for (size_t round = 0; round < 6; ++round) {
        const size_t which = (c + round) % prompts.size();
        if (round == 3) {
          auto metrics = client().Get("/metrics");
          if (!metrics || metrics->status != 200) {
            failures[c].push_back("/metrics failed");
          }
        }
        Reply reply = complete(prompts[which], 5, round % 2 == 1);
        if (!reply.error.empty()) {
          failures[c].push_back(reply.error);
        } else if (reply.text != expected[which]) {
          failures[c].push_back("'" + prompts[which] + "' gave '" + reply.text + "', sequentially '" + expected[which] +
                                "'");
        }
      }
    });
  }
  for (std::thread& thread : clients) {
    thread.join();
  }
  for (size_t c = 0; c < failures.size(); ++c) {
    EXPECT_TRUE(failures[c].empty()) << "client " << c << ": " << ::testing::PrintToString(failures[c]);
  }
}

TEST_F(HttpServerThreadsTest, ClientsThatLeaveMidStreamFreeTheirSessions) {
  set_model();
  std::vector<std::thread> leavers;
  std::atomic<int> streams_started{0};
  for (int i = 0; i < 3; ++i) {
    leavers.emplace_back([&] {
      httplib::Client http = client();
      httplib::Request request;
      request.method = "POST";
      request.path = kCompletions;
      request.body = completion_body("In the beginning", 50, true);
      request.set_header("Content-Type", "application/json");
      request.response_handler = [&](const httplib::Response& response) {
        if (response.status == 200) {
          streams_started.fetch_add(1);
        }
        return true;
      };
      request.content_receiver = [](const char*, size_t, uint64_t, uint64_t) {
        return false;  // leave after the first bytes
      };
      http.send(request);
    });
  }
  for (std::thread& thread : leavers) {
    thread.join();
  }
  EXPECT_EQ(streams_started.load(), 3);
  // Both sessions come back: two requests at once finish.
  std::vector<Reply> replies(2);
  std::vector<std::thread> after;
  for (size_t i = 0; i < replies.size(); ++i) {
    after.emplace_back([&, i] { replies[i] = complete("And", 3, i == 1); });
  }
  for (std::thread& thread : after) {
    thread.join();
  }
  for (const Reply& reply : replies) {
    EXPECT_TRUE(reply.error.empty()) << reply.error;
  }
}

TEST_F(HttpServerThreadsTest, StopWhileRepliesAreInFlightEndsListen) {
  set_model();
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; ++i) {
    clients.emplace_back([&, i] {
      httplib::Client http = client();
      http.Post(kCompletions, completion_body("In the beginning", 50, i % 2 == 0), "application/json");
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  server_->stop();
  listener_.join();
  for (std::thread& thread : clients) {
    thread.join();
  }
  EXPECT_TRUE(listen_status_.ok()) << listen_status_.to_string();
  EXPECT_FALSE(client().Get("/health")) << "nothing listens after stop()";
}

ServerOptions on_port(int port) {
  ServerOptions options;
  options.port = port;
  return options;
}

// httplib's own stop() is lost when it comes before its accept loop runs: a server whose load
// failed at once (a missing file) was stopped that early, and listen() then never returned.
TEST(HttpServerStopTest, StopRightAfterListenIsCalledEndsIt) {
  for (int round = 0; round < 50; ++round) {
    auto server = Server::create(on_port(0));
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    ASSERT_TRUE((*server)->bind().ok());
    Status listened;
    std::thread listener([&] { listened = (*server)->listen(); });
    if (round % 2 == 1) {
      std::this_thread::yield();
    }
    (*server)->stop();
    listener.join();
    EXPECT_TRUE(listened.ok()) << listened.to_string();
  }
}

TEST(HttpServerStopTest, StopBeforeListenMakesListenReturn) {
  auto server = Server::create(on_port(0));
  ASSERT_TRUE(server.ok());
  ASSERT_TRUE((*server)->bind().ok());
  (*server)->stop();
  EXPECT_TRUE((*server)->listen().ok());
}

// httplib's default socket options share a port (SO_REUSEPORT): a second server bound it and the
// kernel split the connections between the two.
TEST(HttpServerBindTest, APortInUseIsRefused) {
  auto first = Server::create(on_port(0));
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*first)->bind().ok());
  const int port = (*first)->port();
  auto second = Server::create(on_port(port));
  ASSERT_TRUE(second.ok());
  const Status bound = (*second)->bind();
  EXPECT_EQ(bound.code(), StatusCode::kUnavailable);
  EXPECT_EQ(bound.message(), "127.0.0.1:" + std::to_string(port) +
                                 " is already in use (another server?): choose "
                                 "another --port");
}

}  // namespace
}  // namespace staticlm::server
