// SPDX-License-Identifier: Apache-2.0
#include "staticlm/server/http_server.h"

#include <httplib.h>
#include <netdb.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>

#include <sys/socket.h>

#include "staticlm/llm/embedding.h"
#include "staticlm/server/completion_job.h"
#include "staticlm/server/embeddings_endpoint.h"
#include "staticlm/server/metrics.h"
#include "staticlm/server/openai_json.h"
#include "staticlm/server/request_framing.h"
#include "staticlm/server/session_pool.h"
#include "staticlm/server/slot_actions.h"
#include "staticlm/server/token_endpoints.h"
#include "staticlm/server/web_assets.h"

namespace staticlm::server {
namespace {

// Request bodies of the small endpoints (/tokenize, /detokenize) nest no deeper than this.
constexpr int kMaxJsonDepth = 64;
// How long an idle connection may keep its worker (httplib's default is 5 s).
constexpr time_t kKeepAliveSeconds = 2;

// Compares in time that depends only on the lengths, so the key cannot be guessed byte by byte.
bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned char difference = a.size() == b.size() ? 0 : 1;
  const std::string_view longer = a.size() >= b.size() ? a : b;
  for (size_t i = 0; i < longer.size(); ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    difference |= static_cast<unsigned char>(x ^ y);
  }
  return difference == 0;
}

// Metrics label for a path: the known endpoints by name, everything else as one label, so a
// client probing random paths cannot grow the metrics without bound.
std::string endpoint_label(const std::string& path) {
  constexpr std::string_view kKnown[] = {"/health",     "/v1/models", "/v1/chat/completions", "/v1/completions",
                                         "/completion", "/tokenize",  "/detokenize",          "/metrics",
                                         "/props",      "/slots",     "/v1/embeddings",       "/embeddings"};
  for (std::string_view known : kKnown) {
    if (path == known) {
      return path;
    }
  }
  if (path.starts_with("/slots/")) {
    return "/slots/{id}";
  }
  return find_web_asset(path) ? "web" : "other";
}

void reply_json(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(dump_json_text(body), "application/json");
}

void reply_error(httplib::Response& res, const ApiError& error) {
  if (error.http_status == 503 && error.code == "server_busy") {
    res.set_header("Retry-After", "1");
  }
  reply_json(res, error.http_status, error_json(error));
}

// Answers and closes the connection: for a request whose body was not read (refused before it, or
// cut off at the limit), so that its bytes are never parsed as the next request. cpp-httplib 0.11
// closes a connection only when writing a response fails, so the body's provider writes it all and
// then reports failure.
void reply_and_close(httplib::Response& res, const ApiError& error) {
  auto body = std::make_shared<const std::string>(dump_json_text(error_json(error)));
  res.status = error.http_status;
  res.set_header("Connection", "close");
  if (error.http_status == 405) {
    res.set_header("Allow", "GET, HEAD, POST");
  }
  res.set_content_provider(body->size(), "application/json",
                           [body](size_t offset, size_t length, httplib::DataSink& sink) {
                             sink.write(body->data() + offset, length);
                             return false;
                           });
}

RequestFraming framing_of(const httplib::Request& req) {
  RequestFraming framing;
  framing.method = req.method;
  for (auto [at, end] = req.headers.equal_range("Content-Length"); at != end; ++at) {
    framing.content_lengths.push_back(at->second);
  }
  for (auto [at, end] = req.headers.equal_range("Transfer-Encoding"); at != end; ++at) {
    framing.transfer_encodings.push_back(at->second);
  }
  if (auto type = req.headers.find("Content-Type"); type != req.headers.end()) {
    framing.content_type = type->second;
  }
  return framing;
}

// Why binding `host:port` failed, from a bind of our own (httplib reports only failure).
std::string bind_failure(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (const int error = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); error != 0) {
    return str_cat("cannot listen on ", host, ":", port, ": ", gai_strerror(error));
  }
  int bind_errno = 0;
  for (addrinfo* address = found; address != nullptr && bind_errno != EADDRINUSE; address = address->ai_next) {
    const int sock = socket(address->ai_family, address->ai_socktype, address->ai_protocol);
    if (sock < 0) {
      bind_errno = errno;
      continue;
    }
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    bind_errno = bind(sock, address->ai_addr, address->ai_addrlen) == 0 ? 0 : errno;
    close(sock);
  }
  freeaddrinfo(found);
  switch (bind_errno) {
    case EADDRINUSE: return str_cat(host, ":", port, " is already in use (another server?): choose another --port");
    case EADDRNOTAVAIL: return str_cat("cannot listen on ", host, ":", port, ": not an address of this machine");
    case EACCES: return str_cat("cannot listen on ", host, ":", port, ": permission denied (ports below 1024 need it)");
    case 0: return str_cat("cannot listen on ", host, ":", port);
    default: return str_cat("cannot listen on ", host, ":", port, ": ", std::strerror(bind_errno));
  }
}

// "scheme://host[:port]", as a browser sends it in Origin: no path, query or user info.
bool is_origin(std::string_view origin) {
  const size_t scheme_end = origin.find("://");
  if (scheme_end == std::string_view::npos || scheme_end == 0 || scheme_end + 3 == origin.size()) {
    return false;
  }
  for (char c : origin.substr(0, scheme_end)) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') {
      return false;
    }
  }
  for (char c : origin.substr(scheme_end + 3)) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != ':' && c != '[' && c != ']') {
      return false;
    }
  }
  return true;
}

void reply_unauthorized(httplib::Response& res, const ApiError& error) {
  res.set_header("WWW-Authenticate", "Bearer");
  reply_error(res, error);
}

void reply(httplib::Response& res, const Result<Json>& answer) {
  if (answer.ok()) {
    reply_json(res, 200, *answer);
  } else {
    reply_error(res, api_error(answer.status()));
  }
}

}  // namespace

class Server::Impl {
 public:
  explicit Impl(ServerOptions options) : options_(std::move(options)) {}

  void install_routes();
  Status bind();
  int port() const { return port_; }
  Status set_model(std::unique_ptr<Engine> engine, ProgramChatTemplate chat, std::unique_ptr<Engine> draft);
  Status listen();
  void stop();

 private:
  using BodyHandler = void (Impl::*)(const httplib::Request& req, std::string_view body, httplib::Response& res);
  // Registers a POST endpoint whose body is read here, at most max_body_bytes whatever the framing.
  void post(const std::string& pattern, BodyHandler handler);
  // The 401 to answer when the endpoint needs the API key and the request lacks it.
  std::optional<ApiError> api_key_refusal(const httplib::Request& req) const;
  // Sets the CORS headers when the request comes from an allowed origin; true then.
  bool cors_headers(const httplib::Request& req, httplib::Response& res) const;
  void answer_preflight(const httplib::Request& req, httplib::Response& res) const;
  bool require_model(httplib::Response& res) const;
  void models(httplib::Response& res) const;
  void model(const httplib::Request& req, httplib::Response& res) const;
  void props(httplib::Response& res) const;
  void slots(httplib::Response& res) const;
  Json model_json() const;
  void completion(std::string_view body, httplib::Response& res, Endpoint endpoint);
  void chat_completions(const httplib::Request& req, std::string_view body, httplib::Response& res);
  void completions(const httplib::Request& req, std::string_view body, httplib::Response& res);
  void native_completion(const httplib::Request& req, std::string_view body, httplib::Response& res);
  void tokenize(const httplib::Request& req, std::string_view body, httplib::Response& res);
  void detokenize(const httplib::Request& req, std::string_view body, httplib::Response& res);
  void slot_action(const httplib::Request& req, std::string_view body, httplib::Response& res);
  void embeddings(const httplib::Request& req, std::string_view body, httplib::Response& res);
  void no_endpoint(const httplib::Request& req, std::string_view body, httplib::Response& res);
  void fill_error_body(const httplib::Request& req, httplib::Response& res) const;

  ServerOptions options_;
  int port_ = 0;
  std::atomic<bool> ready_{false};
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Engine> draft_;  // before the pool, whose draft sessions it outlives
  std::unique_ptr<ProgramChatTemplate> chat_;
  std::unique_ptr<SessionPool> pool_;
  int64_t loaded_at_ = 0;
  Metrics metrics_;
  std::atomic<uint64_t> next_id_{0};
  // Set by stop(): generations and waits for a session end, answering that the server is stopping.
  std::atomic<bool> shutting_down_{false};
  std::atomic<bool> listening_{false};  // inside listen()
  // Completion replies whose handler has returned and whose body is not written yet: httplib
  // writes no body at all once stopped, so stop() lets them end first.
  std::atomic<int> replies_in_flight_{0};
  std::mutex stop_mutex_;
  bool http_stopped_ = false;
  // Last, so it is destroyed first: no handler can outlive the model it uses.
  httplib::Server http_;
};

void Server::Impl::install_routes() {
  // A worker per session and per queued request, and more for the quick endpoints (/health,
  // /metrics) and for idle keep-alive connections, each of which holds a worker until it closes
  // or its keep-alive timeout passes. Connections beyond the workers wait in httplib's queue.
  const size_t workers = std::max<size_t>(32, static_cast<size_t>(options_.parallel + options_.queue) + 16);
  http_.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  http_.set_keep_alive_timeout(kKeepAliveSeconds);
  http_.set_payload_max_length(options_.max_body_bytes);
  // httplib's default adds SO_REUSEPORT, with which a second server binds the same port and the
  // kernel splits the connections between the two. SO_REUSEADDR alone still allows a restart
  // while the last run's connections are in TIME_WAIT.
  http_.set_socket_options([](socket_t sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // Runs before any byte of the body is read.
  http_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    // First, so that every response to an allowed origin carries them: errors, refusals and
    // streams alike (a browser hides a response without them from the page, errors included).
    const bool cors = cors_headers(req, res);
    const RequestFraming framing = framing_of(req);
    if (std::optional<ApiError> refused = refuse_framing(framing)) {
      reply_and_close(res, *refused);
      return httplib::Server::HandlerResponse::Handled;
    }
    // RFC 9112 §6.3: a request with neither Content-Length nor Transfer-Encoding has no body
    // (`curl -X POST URL`). httplib 0.11 reads such a POST's body until the connection closes,
    // which the client, waiting for the answer, never does: the request is given its length, 0,
    // before its body is read. (httplib's Request is not const; only the handler's view is.)
    if (req.method == "POST" && framing.content_lengths.empty() && framing.transfer_encodings.empty()) {
      const_cast<httplib::Request&>(req).set_header("Content-Length", "0");
    }
    if (cors && req.method == "OPTIONS") {  // a preflight: no body (refused above), no API key
      answer_preflight(req, res);
      return httplib::Server::HandlerResponse::Handled;
    }
    // A request with a body is answered once its body is read (post()): a reply before it would
    // leave the body unread on the connection.
    if (!announces_body(framing)) {
      if (std::optional<ApiError> refused = api_key_refusal(req)) {
        reply_unauthorized(res, *refused);
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http_.set_error_handler([this](const httplib::Request& req, httplib::Response& res) { fill_error_body(req, res); });
  http_.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    metrics_.count_request(endpoint_label(req.path), res.status);
  });

  http_.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (ready_.load()) {
      reply_json(res, 200, {{"status", "ok"}});
    } else {
      reply_json(res, 503, {{"status", "loading"}});
    }
  });
  http_.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) { models(res); });
  http_.Get(R"(/v1/models/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) { model(req, res); });
  http_.Get("/props", [this](const httplib::Request&, httplib::Response& res) { props(res); });
  http_.Get("/slots", [this](const httplib::Request&, httplib::Response& res) { slots(res); });
  http_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    const bool ready = ready_.load();
    res.set_content(metrics_.render(ready ? pool_->size() : 0, ready ? pool_->busy() : 0, ready ? pool_->queued() : 0),
                    "text/plain; version=0.0.4");
  });
  post("/v1/chat/completions", &Impl::chat_completions);
  post("/v1/completions", &Impl::completions);
  post("/completion", &Impl::native_completion);
  post("/tokenize", &Impl::tokenize);
  post("/detokenize", &Impl::detokenize);
  post(R"(/slots/([^/]*))", &Impl::slot_action);
  post("/v1/embeddings", &Impl::embeddings);
  post("/embeddings", &Impl::embeddings);
  post(".*", &Impl::no_endpoint);  // last: a body sent anywhere else is read within the limit too
  for (const char* path : {"/", "/index.html", "/app.js", "/style.css"}) {
    http_.Get(path, [](const httplib::Request& req, httplib::Response& res) {
      const std::optional<WebAsset> asset = find_web_asset(req.path);
      res.set_content(asset->body.data(), asset->body.size(), std::string(asset->content_type).c_str());
    });
  }
}

bool Server::Impl::cors_headers(const httplib::Request& req, httplib::Response& res) const {
  if (options_.cors_origins.empty() || !req.has_header("Origin")) {
    return false;
  }
  const std::string origin = req.get_header_value("Origin");
  const bool any =
      std::find(options_.cors_origins.begin(), options_.cors_origins.end(), "*") != options_.cors_origins.end();
  if (!any &&
      std::find(options_.cors_origins.begin(), options_.cors_origins.end(), origin) == options_.cors_origins.end()) {
    return false;
  }
  res.set_header("Access-Control-Allow-Origin", any ? "*" : origin.c_str());
  if (!any) {
    res.set_header("Vary", "Origin");  // caches must not serve this answer to another origin
  }
  res.set_header("Access-Control-Expose-Headers", "Retry-After");
  return true;
}

void Server::Impl::answer_preflight(const httplib::Request& req, httplib::Response& res) const {
  res.status = 204;
  res.set_header("Access-Control-Allow-Methods", "GET, HEAD, POST, OPTIONS");
  // The headers a page may send: its own list where it asks (preflights name what the fetch
  // sets), else the ones the API reads.
  const std::string asked = req.get_header_value("Access-Control-Request-Headers");
  res.set_header("Access-Control-Allow-Headers", asked.empty() ? "Authorization, Content-Type" : asked.c_str());
  res.set_header("Access-Control-Max-Age", "600");
}

std::optional<ApiError> Server::Impl::api_key_refusal(const httplib::Request& req) const {
  // The page's own files carry no data: the browser loads them without a key, and the page asks
  // for one when the API answers 401.
  if (options_.api_key.empty() || req.path == "/health" || find_web_asset(req.path)) {
    return std::nullopt;
  }
  const std::string header = req.get_header_value("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  const bool valid = header.size() > kBearer.size() && header.compare(0, kBearer.size(), kBearer) == 0 &&
                     constant_time_equal(std::string_view(header).substr(kBearer.size()), options_.api_key);
  if (valid) {
    return std::nullopt;
  }
  return ApiError{401, "invalid_request_error",
                  header.empty() ? "an API key is required: send it as 'Authorization: Bearer KEY'" : "invalid API key",
                  "", "invalid_api_key"};
}

void Server::Impl::fill_error_body(const httplib::Request& req, httplib::Response& res) const {
  if (!res.body.empty() || res.content_provider_) {
    return;
  }
  ApiError error;
  error.http_status = res.status;
  switch (res.status) {
    case 404: error.message = str_cat("no endpoint ", req.method, " ", req.path, " (docs/server.md lists them)"); break;
    case 413: error = body_too_large(options_.max_body_bytes); break;
    default:
      error.message = str_cat("HTTP ", res.status);
      error.type = res.status >= 500 ? "server_error" : "invalid_request_error";
      break;
  }
  res.set_content(dump_json_text(error_json(error)), "application/json");
}

bool Server::Impl::require_model(httplib::Response& res) const {
  if (ready_.load()) {
    return true;
  }
  reply_error(res, ApiError{503, "unavailable_error", "the model is loading", "", "model_loading"});
  return false;
}

Json Server::Impl::model_json() const {
  return {{"id", options_.model_name},
          {"object", "model"},
          {"created", loaded_at_},
          {"owned_by", "staticlm"},
          {"meta",
           {{"n_ctx", pool_->context_length()},
            {"n_vocab", pool_->vocab_size()},
            {"contract", str_cat(engine_->contract().name(), " v", engine_->contract().version())},
            {"chat_template", chat_->chat_template.origin()},
            {"parallel", pool_->size()}}}};
}

void Server::Impl::models(httplib::Response& res) const {
  if (!require_model(res)) {
    return;
  }
  reply_json(res, 200, {{"object", "list"}, {"data", Json::array({model_json()})}});
}

// OpenAI's GET /v1/models/{model}: this server's one model, or 404 model_not_found.
void Server::Impl::model(const httplib::Request& req, httplib::Response& res) const {
  if (!require_model(res)) {
    return;
  }
  const std::string id = req.matches[1];
  if (id != options_.model_name) {
    reply_error(res,
                ApiError{404, "invalid_request_error",
                         str_cat("The model '", id, "' does not exist (this server has '", options_.model_name, "')"),
                         "model", "model_not_found"});
    return;
  }
  reply_json(res, 200, model_json());
}

// llama-server's GET /props: what a client needs to know before its first request.
void Server::Impl::props(httplib::Response& res) const {
  if (!require_model(res)) {
    return;
  }
  const SamplingParams sampling = engine_->program_sampling_defaults();
  Json params = {{"temperature", sampling.temperature},
                 {"top_k", sampling.top_k},
                 {"top_p", sampling.top_p},
                 {"min_p", sampling.min_p},
                 {"repeat_penalty", sampling.repetition_penalty},
                 {"repeat_last_n", sampling.repetition_window == 0 ? -1 : sampling.repetition_window},
                 {"frequency_penalty", sampling.frequency_penalty},
                 {"presence_penalty", sampling.presence_penalty},
                 {"n_predict", -1}};
  reply_json(res, 200,
             {{"default_generation_settings", {{"n_ctx", pool_->context_length()}, {"params", std::move(params)}}},
              {"total_slots", pool_->size()},
              {"model_alias", options_.model_name},
              {"chat_template", chat_->chat_template.source()},
              {"modalities", {{"vision", false}, {"audio", false}}},
              {"build_info", "staticlm"}});
}

// llama-server's GET /slots, read-only: each session and whether it is generating now.
void Server::Impl::slots(httplib::Response& res) const {
  if (!require_model(res)) {
    return;
  }
  Json out = Json::array();
  const std::vector<bool> in_use = pool_->slots_in_use();
  for (size_t i = 0; i < in_use.size(); ++i) {
    out.push_back({{"id", i}, {"n_ctx", pool_->context_length()}, {"is_processing", static_cast<bool>(in_use[i])}});
  }
  reply_json(res, 200, out);
}

void Server::Impl::post(const std::string& pattern, BodyHandler handler) {
  http_.Post(pattern, [this, handler](const httplib::Request& req, httplib::Response& res,
                                      const httplib::ContentReader& read_content) {
    // Past the limit the rest is read and dropped, up to as much again, so that a client that
    // sends its whole body before reading finds the 413 (closing on unread bytes resets the
    // connection, and the answer with it); beyond that the connection is cut.
    std::string body;
    uint64_t dropped = 0;
    bool too_large = false;
    const bool read = read_content([&](const char* data, size_t length) {
      if (!too_large && length <= options_.max_body_bytes - body.size()) {
        body.append(data, length);
        return true;
      }
      if (!too_large) {
        too_large = true;
        dropped = body.size();
        std::string().swap(body);
      }
      dropped += length;
      return dropped <= 2 * static_cast<uint64_t>(options_.max_body_bytes);
    });
    // httplib answers 413 itself for a Content-Length over its payload limit, which is ours.
    if (too_large || res.status == 413) {
      reply_and_close(res, body_too_large(options_.max_body_bytes));
      return;
    }
    if (!read) {
      reply_and_close(res,
                      ApiError{400, "invalid_request_error", "the request body could not be read", "", "bad_framing"});
      return;
    }
    if (std::optional<ApiError> refused = api_key_refusal(req)) {
      reply_unauthorized(res, *refused);
      return;
    }
    (this->*handler)(req, body, res);
  });
}

void Server::Impl::chat_completions(const httplib::Request&, std::string_view body, httplib::Response& res) {
  completion(body, res, Endpoint::kChatCompletions);
}

void Server::Impl::completions(const httplib::Request&, std::string_view body, httplib::Response& res) {
  completion(body, res, Endpoint::kCompletions);
}

void Server::Impl::native_completion(const httplib::Request&, std::string_view body, httplib::Response& res) {
  completion(body, res, Endpoint::kNativeCompletion);
}

void Server::Impl::no_endpoint(const httplib::Request&, std::string_view, httplib::Response& res) {
  res.status = 404;  // fill_error_body names the path
}

void Server::Impl::completion(std::string_view body, httplib::Response& res, Endpoint endpoint) {
  if (!require_model(res)) {
    return;
  }
  RequestLimits limits;
  limits.max_json_depth = kMaxJsonDepth;
  limits.template_uses_tools = chat_->chat_template.uses_tools();
  limits.vocab_size = std::min<int64_t>(engine_->tokenizer().value()->vocab_size(), pool_->vocab_size());
  auto request = parse_completion_request(body, endpoint, limits);
  if (!request.ok()) {
    reply_error(res, api_error(request.status()));
    return;
  }
  const bool chat = endpoint == Endpoint::kChatCompletions;
  CompletionHeader header;
  header.id = str_cat(chat ? "chatcmpl-" : "cmpl-", loaded_at_, "-", next_id_.fetch_add(1));
  header.created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  header.model = options_.model_name;
  ModelContext model{
      engine_.get(),       engine_->tokenizer().value(),  chat_.get(),     pool_.get(),         &metrics_,
      options_.model_name, options_.client_check_seconds, &shutting_down_, options_.speculation};
  auto job = CompletionJob::prepare(model, std::move(*request), std::move(header));
  if (!job.ok()) {
    reply_error(res, api_error(job.status()));
    return;
  }
  std::shared_ptr<CompletionJob> running = std::move(*job);
  const char* content_type = running->streaming() ? "text/event-stream" : "application/json";
  if (running->streaming()) {
    res.set_header("Cache-Control", "no-cache");
  }
  replies_in_flight_.fetch_add(1);
  res.set_chunked_content_provider(
      content_type,
      [running](size_t, httplib::DataSink& sink) {
        running->run([&sink](std::string_view bytes) { return sink.write(bytes.data(), bytes.size()); });
        sink.done();
        return true;
      },
      [this](bool) { replies_in_flight_.fetch_sub(1); });
}

void Server::Impl::tokenize(const httplib::Request&, std::string_view body, httplib::Response& res) {
  if (require_model(res)) {
    reply(res, tokenize_request(body, *engine_->tokenizer().value(), kMaxJsonDepth));
  }
}

void Server::Impl::detokenize(const httplib::Request&, std::string_view body, httplib::Response& res) {
  if (require_model(res)) {
    reply(res, detokenize_request(body, *engine_->tokenizer().value(), kMaxJsonDepth));
  }
}

// llama-server's slot actions; without a save directory, its 501 and message.
void Server::Impl::slot_action(const httplib::Request& req, std::string_view body, httplib::Response& res) {
  if (options_.slot_save_path.empty()) {
    reply_error(res, ApiError{501, "not_supported_error",
                              "This server does not support slots action. Start it with `--slot-save-path`", "",
                              "not_supported"});
    return;
  }
  if (!require_model(res)) {
    return;
  }
  const std::string id_slot = req.matches[1];
  const std::string action = req.get_param_value("action");
  reply(res, run_slot_action({id_slot, action, body}, *pool_, engine_->file(), options_.slot_save_path, kMaxJsonDepth));
}

// OpenAI's embeddings, L2-normalised as OpenAI's and llama-server's are, pooled as the program
// suggests. Each input is embedded from an empty cache on one session, taken as a completion takes
// one (queued, or 503 when the queue is full); an error after the response began (the server
// stopping, a failed embedding) arrives as the error object with status 200, as a completion's does.
void Server::Impl::embeddings(const httplib::Request&, std::string_view body, httplib::Response& res) {
  if (!require_model(res)) {
    return;
  }
  if (pool_->embedding_pooling().empty()) {
    reply_error(res, ApiError{501, "not_supported_error",
                              "this server's program has no embeddings method: export it with `staticlm export "
                              "--embeddings mean|last`",
                              "", "not_supported"});
    return;
  }
  EmbeddingLimits limits;
  limits.max_json_depth = kMaxJsonDepth;
  limits.vocab_size = std::min<int64_t>(engine_->tokenizer().value()->vocab_size(), pool_->vocab_size());
  limits.context_length = pool_->context_length();
  limits.hidden_size = pool_->hidden_size();
  auto request = parse_embedding_request(body, *engine_->tokenizer().value(), limits);
  if (!request.ok()) {
    reply_error(res, api_error(request.status()));
    return;
  }
  // A place in the queue before the response starts, so a full queue is answered 503.
  auto ticket = pool_->enqueue();
  if (!ticket.ok()) {
    reply_error(res, api_error(ticket.status()));
    return;
  }
  struct Job {
    EmbeddingRequest request;
    std::optional<QueueTicket> ticket;
  };
  auto job = std::make_shared<Job>(Job{std::move(*request), std::move(*ticket)});
  replies_in_flight_.fetch_add(1);
  // Written as a completion is, so that a client that is gone (a space before the JSON body, which
  // clients skip, fails to write) or a stopping server ends the work between inputs.
  res.set_chunked_content_provider(
      "application/json",
      [this, job](size_t, httplib::DataSink& sink) {
        auto write = [&sink](std::string_view bytes) { return sink.write(bytes.data(), bytes.size()); };
        const Json stopping = error_json(ApiError{
            503, "unavailable_error", "the server is stopping: the request was cancelled", "", "shutting_down"});
        // No prompt to match: the least recently used session is the one whose cache is given up.
        std::optional<SessionLease> lease = pool_->acquire(
            std::move(*job->ticket), {}, [&] { return !shutting_down_.load() && write(" "); },
            options_.client_check_seconds);
        EmbeddingOptions options;
        options.normalize = true;
        std::vector<std::vector<float>> out;
        int64_t tokens = 0;
        auto last_check = std::chrono::steady_clock::now();
        const auto check_every = std::chrono::duration<double>(options_.client_check_seconds);
        for (size_t i = 0; lease && i < job->request.inputs.size(); ++i) {
          if (std::chrono::steady_clock::now() - last_check > check_every) {
            last_check = std::chrono::steady_clock::now();
            if (!write(" ")) {
              break;  // the client is gone
            }
          }
          if (shutting_down_.load()) {
            write(dump_json_text(stopping));
            break;
          }
          auto embedding = embed_tokens(lease->session(), job->request.inputs[i], options);
          if (!embedding.ok()) {
            write(dump_json_text(error_json(api_error(embedding.status()))));
            break;
          }
          out.push_back(std::move(*embedding));
          tokens += static_cast<int64_t>(job->request.inputs[i].size());
        }
        if (!lease) {
          write(dump_json_text(stopping));
        } else if (out.size() == job->request.inputs.size()) {
          write(dump_json_text(embedding_response_json(out, job->request.base64, options_.model_name, tokens)));
        }
        sink.done();
        return true;
      },
      [this](bool) { replies_in_flight_.fetch_sub(1); });
}

Status Server::Impl::bind() {
  if (options_.port == 0) {
    port_ = http_.bind_to_any_port(options_.host);
  } else {
    port_ = http_.bind_to_port(options_.host, options_.port) ? options_.port : -1;
  }
  if (port_ <= 0) {
    return unavailable(bind_failure(options_.host, options_.port));
  }
  return ok_status();
}

Status Server::Impl::set_model(std::unique_ptr<Engine> engine, ProgramChatTemplate chat,
                               std::unique_ptr<Engine> draft) {
  STATICLM_RETURN_IF_ERROR(engine->tokenizer().status());
  STATICLM_RETURN_IF_ERROR(check_speculation_options(options_.speculation));
  if (draft && (options_.speculation.lookup_ngram > 0 || options_.speculation.proposer != nullptr)) {
    return invalid_argument("speculation takes one proposer: a draft program or prompt lookup, not both");
  }
  if (options_.speculation.enabled() || draft) {
    STATICLM_RETURN_IF_ERROR(draft ? engine->check_draft(*draft) : engine->check_speculation());
  }
  STATICLM_ASSIGN_OR_RETURN(pool_, SessionPool::create(*engine, options_.parallel, options_.queue, draft.get()));
  engine_ = std::move(engine);
  draft_ = std::move(draft);
  chat_ = std::make_unique<ProgramChatTemplate>(std::move(chat));
  loaded_at_ =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  ready_.store(true);
  return ok_status();
}

Status Server::Impl::listen() {
  listening_.store(true);
  if (shutting_down_.load()) {
    listening_.store(false);
    return ok_status();
  }
  const bool listened = http_.listen_after_bind();
  listening_.store(false);
  if (!listened && !shutting_down_.load()) {
    return unavailable("the server on ", options_.host, ":", port_, " stopped listening unexpectedly");
  }
  return ok_status();
}

void Server::Impl::stop() {
  shutting_down_.store(true);
  std::lock_guard<std::mutex> lock(stop_mutex_);
  // Replies in flight see shutting_down_ within client_check_seconds and end with the
  // "shutting_down" error; a reply httplib had not begun writing when stopped would reach its
  // client as headers without a body. A client that does not read is not waited for long.
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(std::max(1.0, 4 * options_.client_check_seconds));
  while (replies_in_flight_.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // httplib's stop() does nothing before its accept loop runs (a stop right after listen() was
  // called would be lost), and must be called once: wait for the loop, or for listen() to have
  // seen shutting_down_ and returned.
  while (!http_stopped_ && listening_.load()) {
    if (http_.is_running()) {
      http_.stop();
      http_stopped_ = true;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

Result<std::unique_ptr<Server>> Server::create(ServerOptions options) {
  if (options.parallel < 1) {
    return invalid_argument("option 'parallel': expected >= 1, found ", options.parallel);
  }
  if (options.queue < 0) {
    return invalid_argument("option 'queue': expected >= 0, found ", options.queue);
  }
  if (options.port < 0 || options.port > 65535) {
    return invalid_argument("option 'port': expected 0 to 65535, found ", options.port);
  }
  if (options.max_body_bytes == 0) {
    return invalid_argument("option 'max_body_bytes': expected > 0");
  }
  for (const std::string& origin : options.cors_origins) {
    if (origin == "*" && !options.api_key.empty()) {
      return invalid_argument(
          "option 'cors_origin': '*' with an API key would let any web page use the key: name the origins");
    }
    if (origin != "*" && !is_origin(origin)) {
      return invalid_argument(
          "option 'cors_origin': expected '*' or scheme://host[:port] (as a browser sends it, no "
          "path), found '",
          origin, "'");
    }
  }
  std::error_code not_a_directory;
  if (!options.slot_save_path.empty() && !std::filesystem::is_directory(options.slot_save_path, not_a_directory)) {
    return invalid_argument("option 'slot_save_path': '", options.slot_save_path, "' is not a directory");
  }
  auto impl = std::make_unique<Impl>(std::move(options));
  impl->install_routes();
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;
Status Server::bind() {
  return impl_->bind();
}
int Server::port() const {
  return impl_->port();
}
Status Server::set_model(std::unique_ptr<Engine> engine, ProgramChatTemplate chat, std::unique_ptr<Engine> draft) {
  return impl_->set_model(std::move(engine), std::move(chat), std::move(draft));
}
Status Server::listen() {
  return impl_->listen();
}
void Server::stop() {
  impl_->stop();
}

}  // namespace staticlm::server
