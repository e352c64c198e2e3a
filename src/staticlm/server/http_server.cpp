#include "staticlm/server/http_server.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <random>

#include "staticlm/server/completion_job.h"
#include "staticlm/server/metrics.h"
#include "staticlm/server/openai_json.h"
#include "staticlm/server/session_pool.h"
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
  constexpr std::string_view kKnown[] = {
      "/health", "/v1/models", "/v1/chat/completions", "/v1/completions", "/tokenize", "/detokenize", "/metrics"};
  for (std::string_view known : kKnown) {
    if (path == known) {
      return path;
    }
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
  Status set_model(std::unique_ptr<Engine> engine, ProgramChatTemplate chat);
  Status listen();
  void stop() { http_.stop(); }

 private:
  httplib::Server::HandlerResponse check_api_key(const httplib::Request& req, httplib::Response& res) const;
  bool require_model(httplib::Response& res) const;
  void models(httplib::Response& res) const;
  void completion(const httplib::Request& req, httplib::Response& res, Endpoint endpoint);
  void tokenize(const httplib::Request& req, httplib::Response& res) const;
  void detokenize(const httplib::Request& req, httplib::Response& res) const;
  void fill_error_body(const httplib::Request& req, httplib::Response& res) const;

  ServerOptions options_;
  int port_ = 0;
  std::atomic<bool> ready_{false};
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<ProgramChatTemplate> chat_;
  std::unique_ptr<SessionPool> pool_;
  int64_t loaded_at_ = 0;
  Metrics metrics_;
  std::atomic<uint64_t> next_id_{0};
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
  http_.set_pre_routing_handler(
      [this](const httplib::Request& req, httplib::Response& res) { return check_api_key(req, res); });
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
  http_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    const bool ready = ready_.load();
    res.set_content(metrics_.render(ready ? pool_->size() : 0, ready ? pool_->busy() : 0, ready ? pool_->queued() : 0),
                    "text/plain; version=0.0.4");
  });
  http_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    completion(req, res, Endpoint::kChatCompletions);
  });
  http_.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    completion(req, res, Endpoint::kCompletions);
  });
  http_.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) { tokenize(req, res); });
  http_.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) { detokenize(req, res); });
  for (const char* path : {"/", "/index.html", "/app.js", "/style.css"}) {
    http_.Get(path, [](const httplib::Request& req, httplib::Response& res) {
      const std::optional<WebAsset> asset = find_web_asset(req.path);
      res.set_content(asset->body.data(), asset->body.size(), std::string(asset->content_type).c_str());
    });
  }
}

httplib::Server::HandlerResponse Server::Impl::check_api_key(const httplib::Request& req,
                                                             httplib::Response& res) const {
  // The page's own files carry no data: the browser loads them without a key, and the page asks
  // for one when the API answers 401.
  if (options_.api_key.empty() || req.path == "/health" || find_web_asset(req.path)) {
    return httplib::Server::HandlerResponse::Unhandled;
  }
  const std::string header = req.get_header_value("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  const bool valid = header.size() > kBearer.size() && header.compare(0, kBearer.size(), kBearer) == 0 &&
                     constant_time_equal(std::string_view(header).substr(kBearer.size()), options_.api_key);
  if (valid) {
    return httplib::Server::HandlerResponse::Unhandled;
  }
  ApiError error{401, "invalid_request_error",
                 header.empty() ? "an API key is required: send it as 'Authorization: Bearer KEY'" : "invalid API key",
                 "", "invalid_api_key"};
  res.set_header("WWW-Authenticate", "Bearer");
  reply_error(res, error);
  return httplib::Server::HandlerResponse::Handled;
}

void Server::Impl::fill_error_body(const httplib::Request& req, httplib::Response& res) const {
  if (!res.body.empty()) {
    return;
  }
  ApiError error;
  error.http_status = res.status;
  switch (res.status) {
    case 404: error.message = str_cat("no endpoint ", req.method, " ", req.path, " (docs/server.md lists them)"); break;
    case 413:
      error.message =
          str_cat("the request body exceeds the limit of ", options_.max_body_bytes, " bytes (serve --max-body-bytes)");
      error.code = "request_too_large";
      break;
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

void Server::Impl::models(httplib::Response& res) const {
  if (!require_model(res)) {
    return;
  }
  Json model = {{"id", options_.model_name},
                {"object", "model"},
                {"created", loaded_at_},
                {"owned_by", "staticlm"},
                {"meta",
                 {{"n_ctx", pool_->context_length()},
                  {"n_vocab", pool_->vocab_size()},
                  {"contract", str_cat(engine_->contract().name(), " v", engine_->contract().version())},
                  {"chat_template", chat_->chat_template.origin()},
                  {"parallel", pool_->size()}}}};
  reply_json(res, 200, {{"object", "list"}, {"data", Json::array({std::move(model)})}});
}

void Server::Impl::completion(const httplib::Request& req, httplib::Response& res, Endpoint endpoint) {
  if (!require_model(res)) {
    return;
  }
  RequestLimits limits;
  limits.max_json_depth = kMaxJsonDepth;
  limits.template_uses_tools = chat_->chat_template.uses_tools();
  auto request = parse_completion_request(req.body, endpoint, limits);
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
  ModelContext model{engine_.get(),       engine_->tokenizer().value(), chat_.get(), pool_.get(), &metrics_,
                     options_.model_name, options_.client_check_seconds};
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
  res.set_chunked_content_provider(content_type, [running](size_t, httplib::DataSink& sink) {
    running->run([&sink](std::string_view bytes) { return sink.write(bytes.data(), bytes.size()); });
    sink.done();
    return true;
  });
}

void Server::Impl::tokenize(const httplib::Request& req, httplib::Response& res) const {
  if (require_model(res)) {
    reply(res, tokenize_request(req.body, *engine_->tokenizer().value(), kMaxJsonDepth));
  }
}

void Server::Impl::detokenize(const httplib::Request& req, httplib::Response& res) const {
  if (require_model(res)) {
    reply(res, detokenize_request(req.body, *engine_->tokenizer().value(), kMaxJsonDepth));
  }
}

Status Server::Impl::bind() {
  if (options_.port == 0) {
    port_ = http_.bind_to_any_port(options_.host);
  } else {
    port_ = http_.bind_to_port(options_.host, options_.port) ? options_.port : -1;
  }
  if (port_ <= 0) {
    return unavailable("cannot listen on ", options_.host, ":", options_.port,
                       " (in use, or not an address of this machine?)");
  }
  return ok_status();
}

Status Server::Impl::set_model(std::unique_ptr<Engine> engine, ProgramChatTemplate chat) {
  STATICLM_RETURN_IF_ERROR(engine->tokenizer().status());
  STATICLM_ASSIGN_OR_RETURN(pool_, SessionPool::create(*engine, options_.parallel, options_.queue));
  engine_ = std::move(engine);
  chat_ = std::make_unique<ProgramChatTemplate>(std::move(chat));
  loaded_at_ =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  ready_.store(true);
  return ok_status();
}

Status Server::Impl::listen() {
  if (!http_.listen_after_bind()) {
    return unavailable("the server on ", options_.host, ":", port_, " stopped listening unexpectedly");
  }
  return ok_status();
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
Status Server::set_model(std::unique_ptr<Engine> engine, ProgramChatTemplate chat) {
  return impl_->set_model(std::move(engine), std::move(chat));
}
Status Server::listen() {
  return impl_->listen();
}
void Server::stop() {
  impl_->stop();
}

}  // namespace staticlm::server
