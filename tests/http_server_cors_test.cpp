// SPDX-License-Identifier: Apache-2.0
// CORS (`serve --cors-origin`): a page of an allowed origin gets its preflight answered and the
// CORS headers on every response (errors, refusals before the body is read, 404s and streams); any
// other origin, and every origin when none is configured, gets none; `*` is refused beside an API
// key, and an origin that is not scheme://host[:port] is refused when the server is created.
#include <httplib.h>

#include <string>
#include <thread>

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

constexpr const char* kApp = "http://app.example:3000";

class CorsServer {
 public:
  explicit CorsServer(ServerOptions options) {
    options.port = 0;
    auto created = Server::create(std::move(options));
    EXPECT_TRUE(created.ok()) << created.status().to_string();
    if (!created.ok()) {
      return;
    }
    server_ = std::move(*created);
    EXPECT_TRUE(server_->bind().ok());
    listener_ = std::thread([this] { EXPECT_TRUE(server_->listen().ok()); });
  }
  ~CorsServer() {
    if (server_) {
      server_->stop();
    }
    if (listener_.joinable()) {
      listener_.join();
    }
  }
  Server& server() { return *server_; }

  httplib::Result send(const std::string& method, const std::string& path, const httplib::Headers& headers,
                       const std::string& body = "") const {
    httplib::Client http("127.0.0.1", server_->port());
    http.set_read_timeout(60, 0);
    httplib::Request request;
    request.method = method;
    request.path = path;
    request.headers = headers;
    if (!body.empty()) {
      request.body = body;
      request.set_header("Content-Type", "application/json");
    }
    return http.send(request);
  }

 private:
  std::unique_ptr<Server> server_;
  std::thread listener_;
};

ServerOptions allowing(std::vector<std::string> origins, std::string api_key = "") {
  ServerOptions options;
  options.cors_origins = std::move(origins);
  options.api_key = std::move(api_key);
  return options;
}

std::string allowed_origin(const httplib::Result& result) {
  return result->get_header_value("Access-Control-Allow-Origin");
}

TEST(HttpServerCorsTest, AnAllowedOriginsPreflightIsAnswered) {
  CorsServer cors(allowing({kApp}));
  auto preflight = cors.send("OPTIONS", "/v1/chat/completions",
                             {{"Origin", kApp},
                              {"Access-Control-Request-Method", "POST"},
                              {"Access-Control-Request-Headers", "authorization, content-type"}});
  ASSERT_TRUE(preflight);
  EXPECT_EQ(preflight->status, 204);
  EXPECT_EQ(allowed_origin(preflight), kApp);
  EXPECT_EQ(preflight->get_header_value("Vary"), "Origin");
  EXPECT_NE(preflight->get_header_value("Access-Control-Allow-Methods").find("POST"), std::string::npos);
  EXPECT_EQ(preflight->get_header_value("Access-Control-Allow-Headers"), "authorization, content-type");
}

// A preflight carries no body: one that announces a body is refused and its connection closed,
// so its bytes are never read as the next request, and the page can still read why.
TEST(HttpServerCorsTest, APreflightWithABodyIsRefused) {
  CorsServer cors(allowing({kApp}));
  auto refused = cors.send("OPTIONS", "/v1/completions", {{"Origin", kApp}}, "GET /health HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400);
  EXPECT_EQ(refused->get_header_value("Connection"), "close");
  EXPECT_EQ(allowed_origin(refused), kApp);
}

TEST(HttpServerCorsTest, EveryResponseToAnAllowedOriginCarriesTheHeaders) {
  CorsServer cors(allowing({"http://other.example", kApp}));
  auto loading = cors.send("GET", "/health", {{"Origin", kApp}});  // 503 until a model is set
  ASSERT_TRUE(loading);
  EXPECT_EQ(loading->status, 503);
  EXPECT_EQ(allowed_origin(loading), kApp);
  auto missing = cors.send("GET", "/no/such/path", {{"Origin", kApp}});
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(allowed_origin(missing), kApp);
  auto refused = cors.send("POST", "/v1/completions", {{"Origin", kApp}, {"Content-Type", "text/plain"}}, "x");
  ASSERT_TRUE(refused);
  EXPECT_GE(refused->status, 400);
  EXPECT_EQ(allowed_origin(refused), kApp);
}

TEST(HttpServerCorsTest, OtherOriginsAndServersWithoutCorsGetNoHeaders) {
  CorsServer cors(allowing({kApp}));
  auto other = cors.send("GET", "/health", {{"Origin", "http://evil.example"}});
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->has_header("Access-Control-Allow-Origin"));
  auto other_preflight = cors.send("OPTIONS", "/v1/completions",
                                   {{"Origin", "http://evil.example"}, {"Access-Control-Request-Method", "POST"}});
  ASSERT_TRUE(other_preflight);
  EXPECT_NE(other_preflight->status, 204);
  EXPECT_FALSE(other_preflight->has_header("Access-Control-Allow-Origin"));
  auto same_origin = cors.send("GET", "/health", {});
  ASSERT_TRUE(same_origin);
  EXPECT_FALSE(same_origin->has_header("Access-Control-Allow-Origin"));

  CorsServer plain(ServerOptions{});
  auto preflight =
      plain.send("OPTIONS", "/v1/completions", {{"Origin", kApp}, {"Access-Control-Request-Method", "POST"}});
  ASSERT_TRUE(preflight);
  EXPECT_NE(preflight->status, 204);
  EXPECT_FALSE(preflight->has_header("Access-Control-Allow-Origin"));
}

TEST(HttpServerCorsTest, AnyOriginWithoutAKey) {
  CorsServer cors(allowing({"*"}));
  auto reply = cors.send("GET", "/health", {{"Origin", "http://anywhere.example"}});
  ASSERT_TRUE(reply);
  EXPECT_EQ(allowed_origin(reply), "*");
  EXPECT_FALSE(reply->has_header("Vary"));
}

TEST(HttpServerCorsTest, WithAKeyThePreflightNeedsNoneAndRefusalsAreReadable) {
  CorsServer cors(allowing({kApp}, "secret"));
  // A browser sends no Authorization with a preflight: it must not be refused for lacking one.
  auto preflight = cors.send("OPTIONS", "/v1/models", {{"Origin", kApp}, {"Access-Control-Request-Method", "GET"}});
  ASSERT_TRUE(preflight);
  EXPECT_EQ(preflight->status, 204);
  auto unauthorized = cors.send("GET", "/v1/models", {{"Origin", kApp}});
  ASSERT_TRUE(unauthorized);
  EXPECT_EQ(unauthorized->status, 401);
  EXPECT_EQ(allowed_origin(unauthorized), kApp) << "the page can read why it was refused";
}

TEST(HttpServerCorsTest, BadOriginOptionsAreRefused) {
  auto star_with_key = Server::create(allowing({"*"}, "secret"));
  ASSERT_FALSE(star_with_key.ok());
  EXPECT_NE(star_with_key.status().message().find("'*' with an API key"), std::string::npos)
      << star_with_key.status().message();
  for (const char* bad : {"app.example", "http://app.example/", "http://app.example/page", "http://", ""}) {
    auto created = Server::create(allowing({bad}));
    ASSERT_FALSE(created.ok()) << bad;
    EXPECT_NE(created.status().message().find("scheme://host[:port]"), std::string::npos) << created.status().message();
  }
}

TEST(HttpServerCorsTest, AStreamedCompletionCarriesTheHeaders) {
  const std::string path = testing::temp_path("http_server_cors.slm");
  auto exported = export_hf_static(testing::fixture_dir("llama"), path, testing::small_options());
  ASSERT_TRUE(exported.ok()) << exported.status().to_string();
  CorsServer cors(allowing({kApp}));
  auto runtime = builtin_engine_runtime();
  ASSERT_TRUE(runtime.ok()) << runtime.status().to_string();
  auto engine = Engine::open(path, {}, std::move(*runtime));
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  auto tokenizer = (*engine)->tokenizer();
  ASSERT_TRUE(tokenizer.ok());
  auto chat = load_program_chat_template((*engine)->file(), **tokenizer, "");
  ASSERT_TRUE(chat.ok()) << chat.status().to_string();
  ASSERT_TRUE(cors.server().set_model(std::move(*engine), std::move(*chat)).ok());
  const std::string body =
      nlohmann::json{{"prompt", "hello"}, {"max_tokens", 3}, {"temperature", 0}, {"stream", true}}.dump();
  auto streamed = cors.send("POST", "/v1/completions", {{"Origin", kApp}}, body);
  ASSERT_TRUE(streamed);
  EXPECT_EQ(streamed->status, 200) << streamed->body;
  EXPECT_EQ(allowed_origin(streamed), kApp);
  EXPECT_NE(streamed->body.find("data: [DONE]"), std::string::npos) << streamed->body;
}

}  // namespace
}  // namespace staticlm::server
