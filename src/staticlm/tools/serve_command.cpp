// SPDX-License-Identifier: Apache-2.0
// `staticlm serve MODEL`: the OpenAI-compatible server (docs/server.md). It listens first, so
// /health says "loading" while the program opens, then serves until SIGINT or SIGTERM.
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>

#include "staticlm/chat/program_chat_template.h"
#include "staticlm/server/http_server.h"
#include "staticlm/tools/command.h"
#include "staticlm/tools/engine_flags.h"
#include "staticlm/tools/input_files.h"
#include "staticlm/tools/speculation_flags.h"

namespace staticlm::cli {
namespace {

// SIGINT / SIGTERM end the process within a second, whatever it is doing.
constexpr std::chrono::milliseconds kStopDeadline{800};
constexpr uint64_t kMaxApiKeyBytes = 64 * 1024;
constexpr uint64_t kMaxChatTemplateBytes = 16 * 1024 * 1024;

struct ServeArgs {
  EngineArgs model;
  server::ServerOptions server;
  std::string api_key_file;
  std::string chat_template;
  SpeculationFlags speculation;
};

bool is_loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// What the threads of a serve run tell the main thread. Shared with the signal thread, which is
// detached (it may be blocked in sigwait when serve returns).
struct ServeEvents {
  std::mutex mutex;
  std::condition_variable changed;
  int signal = 0;  // SIGINT or SIGTERM once received
  bool loaded = false;
  bool listener_done = false;
  Status load_status;
  Status listen_status;
};

// Loads the model and hands it to the server; its status says why not.
Status load_model(const ServeArgs& args, server::Server& http) {
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, open_engine(args.model));
  STATICLM_ASSIGN_OR_RETURN(Speculation speculation, open_speculation(args.speculation, args.model, *engine));
  STATICLM_ASSIGN_OR_RETURN(const Tokenizer* tokenizer, engine->tokenizer());
  STATICLM_ASSIGN_OR_RETURN(ProgramChatTemplate chat,
                            load_program_chat_template(engine->file(), *tokenizer, args.chat_template));
  if (!chat.notice.empty()) {
    std::fprintf(stderr, "note: %s\n", chat.notice.c_str());
  }
  return http.set_model(std::move(engine), std::move(chat), std::move(speculation.draft));
}

Status serve(ServeArgs args) {
  if (!args.api_key_file.empty()) {
    if (!args.server.api_key.empty()) {
      return invalid_argument("give --api-key or --api-key-file, not both");
    }
    STATICLM_ASSIGN_OR_RETURN(std::string key, read_input_file("--api-key-file", args.api_key_file, kMaxApiKeyBytes));
    while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' ')) {
      key.pop_back();
    }
    if (key.empty()) {
      return invalid_argument("--api-key-file '", args.api_key_file, "' is empty");
    }
    args.server.api_key = std::move(key);
  }
  if (!args.chat_template.empty()) {
    // Checked before listening: a missing file is the command line's mistake, not a load failure.
    STATICLM_RETURN_IF_ERROR(read_input_file("--chat-template", args.chat_template, kMaxChatTemplateBytes).status());
  }
  // The proposer's settings; the draft program is opened with the model (load_model).
  STATICLM_RETURN_IF_ERROR(check_speculation_flags(args.speculation));
  args.server.speculation = speculation_options(args.speculation);
  if (!args.server.slot_save_path.empty()) {
    // Made as llama-server makes it, before listening: a path that cannot be a directory is the
    // command line's mistake.
    std::error_code error;
    std::filesystem::create_directories(args.server.slot_save_path, error);
    std::error_code unused;
    if (error && !std::filesystem::is_directory(args.server.slot_save_path, unused)) {
      return invalid_argument("--slot-save-path '", args.server.slot_save_path,
                              "': cannot make the directory: ", error.message());
    }
  }
  if (args.server.model_name.empty()) {
    args.server.model_name = std::filesystem::path(args.model.path).stem().string();
  }
  // Blocked in every thread started from here on; one thread takes them with sigwait, so a signal
  // never interrupts a request mid-write, and is always taken, whatever the main thread is doing.
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
  auto events = std::make_shared<ServeEvents>();
  std::thread([events, signals] {
    int received = 0;
    sigwait(&signals, &received);
    std::lock_guard<std::mutex> lock(events->mutex);
    events->signal = received;
    events->changed.notify_all();
  }).detach();
  std::thread listener([&http, events] {
    Status status = http->listen();
    std::lock_guard<std::mutex> lock(events->mutex);
    events->listen_status = std::move(status);
    events->listener_done = true;
    events->changed.notify_all();
  });
  std::thread loader([&args, &http, events] {
    Status status = load_model(args, *http);
    std::lock_guard<std::mutex> lock(events->mutex);
    events->load_status = std::move(status);
    events->loaded = true;
    events->changed.notify_all();
  });

  std::unique_lock<std::mutex> lock(events->mutex);
  events->changed.wait(lock, [&] { return events->signal != 0 || events->loaded || events->listener_done; });
  if (events->loaded && events->load_status.ok() && events->signal == 0 && !events->listener_done) {
    std::fprintf(stderr, "staticlm serve: ready: model '%s', %d session(s), queue %d; web page at http://%s:%d/\n",
                 args.server.model_name.c_str(), args.server.parallel, args.server.queue, args.server.host.c_str(),
                 http->port());
    events->changed.wait(lock, [&] { return events->signal != 0 || events->listener_done; });
  }
  if (events->signal != 0) {
    std::fprintf(stderr, "staticlm serve: %s, stopping\n", events->signal == SIGINT ? "interrupted" : "terminated");
  }
  // Stopping cancels the requests in flight, each answered with an error saying so; a load that is
  // still running cannot be cut short, and a connection still sending its request holds a worker
  // until its read times out: past the deadline the process ends without them.
  lock.unlock();
  http->stop();
  lock.lock();
  const bool finished =
      events->changed.wait_for(lock, kStopDeadline, [&] { return events->loaded && events->listener_done; });
  if (!finished) {
    const Status failed = !events->load_status.ok() ? events->load_status : events->listen_status;
    if (!failed.ok()) {
      std::fprintf(stderr, "staticlm serve: error: %s\n", failed.message().c_str());
    }
    std::fprintf(stderr, "staticlm serve: %s did not end within %.1f s; exiting without it\n",
                 events->loaded ? "a connection" : "loading the model",
                 std::chrono::duration<double>(kStopDeadline).count());
    std::fflush(stderr);
    std::_Exit(failed.ok() ? 0 : 1);
  }
  lock.unlock();
  listener.join();
  loader.join();
  if (!events->load_status.ok()) {
    return events->load_status;
  }
  return events->listen_status;
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
  app->add_option("--cors-origin", args->server.cors_origins,
                  "Origin (scheme://host[:port]) whose web pages may call the API, or * for any without --api-key "
                  "(repeatable; default: none)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("--chat-template", args->chat_template,
                  "Jinja chat template to use instead of the program's (docs/chat.md)");
  add_speculation_flags(*app, args->speculation);
  app->add_option("--slot-save-path", args->server.slot_save_path,
                  "Directory of the session files POST /slots/{id}?action=save|restore names (made if missing; "
                  "default: those actions disabled)");
  add_engine_flags(*app, args->model);
  return {app, [args]() { return serve(*args); }};
}

}  // namespace staticlm::cli
