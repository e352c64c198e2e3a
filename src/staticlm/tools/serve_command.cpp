// `staticlm serve MODEL`: the OpenAI-compatible server (docs/server.md). It listens first, so
// /health says "loading" while the program opens, then serves until SIGINT or SIGTERM.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "staticlm/chat/program_chat_template.h"
#include "staticlm/core/mapped_file.h"
#include "staticlm/server/http_server.h"
#include "staticlm/tools/command.h"
#include "staticlm/tools/engine_flags.h"

namespace staticlm::cli {
namespace {

struct ServeArgs {
  EngineArgs model;
  server::ServerOptions server;
  std::string api_key_file;
  std::string chat_template;
};

bool is_loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

Status serve(ServeArgs args) {
  if (!args.api_key_file.empty()) {
    if (!args.server.api_key.empty()) {
      return invalid_argument("give --api-key or --api-key-file, not both");
    }
    STATICLM_ASSIGN_OR_RETURN(std::string key, read_text_file(args.api_key_file));
    while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' ')) {
      key.pop_back();
    }
    if (key.empty()) {
      return invalid_argument("--api-key-file '", args.api_key_file, "' is empty");
    }
    args.server.api_key = std::move(key);
  }
  if (args.server.model_name.empty()) {
    args.server.model_name = std::filesystem::path(args.model.path).stem().string();
  }
  // Every thread started from here on inherits the blocked signals; this one takes them with
  // sigwait, so a signal never interrupts a request mid-write.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<server::Server> http, server::Server::create(args.server));
  STATICLM_RETURN_IF_ERROR(http->bind());
  std::fprintf(stderr, "staticlm serve: listening on http://%s:%d (loading %s)\n", args.server.host.c_str(),
               http->port(), args.model.path.c_str());
  if (!is_loopback(args.server.host) && args.server.api_key.empty()) {
    std::fprintf(stderr,
                 "staticlm serve: warning: listening on %s without --api-key: anyone who can reach this "
                 "port can use the model\n",
                 args.server.host.c_str());
  }
  Status listen_status;
  std::thread listener([&] { listen_status = http->listen(); });
  auto stop_and_join = [&] {
    http->stop();
    listener.join();
  };

  auto engine = open_engine(args.model);
  if (!engine.ok()) {
    stop_and_join();
    return engine.status();
  }
  auto tokenizer = (*engine)->tokenizer();
  if (!tokenizer.ok()) {
    stop_and_join();
    return tokenizer.status();
  }
  auto chat = load_program_chat_template((*engine)->file(), **tokenizer, args.chat_template);
  if (!chat.ok()) {
    stop_and_join();
    return chat.status();
  }
  if (!chat->notice.empty()) {
    std::fprintf(stderr, "note: %s\n", chat->notice.c_str());
  }
  if (Status ready = http->set_model(std::move(*engine), std::move(*chat)); !ready.ok()) {
    stop_and_join();
    return ready;
  }
  std::fprintf(stderr, "staticlm serve: ready: model '%s', %d session(s), queue %d; web page at http://%s:%d/\n",
               args.server.model_name.c_str(), args.server.parallel, args.server.queue, args.server.host.c_str(),
               http->port());
  int received = 0;
  sigwait(&signals, &received);
  std::fprintf(stderr, "staticlm serve: %s, stopping\n", received == SIGINT ? "interrupted" : "terminated");
  stop_and_join();
  return listen_status;
}

}  // namespace

Command add_serve_command(CLI::App& parent) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* app =
      parent.add_subcommand("serve", "Serve a program over an OpenAI-compatible HTTP API, with a chat page");
  app->add_option("model", args->model.path, "Program file (.slm)")->required();
  app->add_option("--host", args->server.host, "Address to listen on")->capture_default_str();
  app->add_option("--port", args->server.port, "Port to listen on (0: any free port)")->capture_default_str();
  app->add_option("--parallel", args->server.parallel, "Requests generating at once (one session each)")
      ->capture_default_str();
  app->add_option("--queue", args->server.queue, "Requests that may wait for a session before 503")
      ->capture_default_str();
  app->add_option("--api-key", args->server.api_key,
                  "Bearer token every endpoint requires but /health and the chat page's own files (visible in `ps`: "
                  "prefer --api-key-file)");
  app->add_option("--api-key-file", args->api_key_file, "File holding the API key");
  app->add_option("--max-body-bytes", args->server.max_body_bytes, "Largest request body accepted (413 beyond)")
      ->capture_default_str();
  app->add_option("--alias", args->server.model_name, "Model id to report (default: the file's name)");
  app->add_option("--chat-template", args->chat_template,
                  "Jinja chat template to use instead of the program's (docs/chat.md)");
  add_engine_flags(*app, args->model);
  return {app, [args]() { return serve(*args); }};
}

}  // namespace staticlm::cli
