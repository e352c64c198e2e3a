// SPDX-License-Identifier: Apache-2.0
// `staticlm serve`: an OpenAI-compatible HTTP server over one loaded program (docs/server.md).
// It listens before the model is loaded (GET /health answers 503 until it is), runs requests on
// `parallel` sessions behind a bounded queue, and serves a small chat page at /.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "staticlm/chat/program_chat_template.h"
#include "staticlm/core/result.h"
#include "staticlm/llm/engine.h"

namespace staticlm::server {

struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback unless told otherwise
  int port = 8080;                 // 0: any free port (port() says which)
  int parallel = 1;                // sessions generating at once
  int queue = 16;                  // requests waiting for a session before 503
  std::string api_key;             // required as a bearer token on every endpoint but /health; "" = none
  size_t max_body_bytes = 1u << 20;
  std::string model_name;  // the id /v1/models reports and responses carry
  // Origins (scheme://host[:port]) whose pages may call the API from a browser, or "*" for any
  // (refused with an api_key: any page could then spend the key a user typed into it). Empty:
  // no CORS headers, as a browser's same-origin default.
  std::vector<std::string> cors_origins;
  // How often a request waiting for a session, or generating a non-streamed reply, checks that its
  // client is still there.
  double client_check_seconds = 0.25;
  // Speculative decoding for every request (its draft session is the request's slot's; set_model
  // takes the draft program).
  SpeculationOptions speculation;
  // Directory of the session files POST /slots/{id}?action=save|restore name (llama-server's
  // --slot-save-path); "" = those actions answer 501. It must exist.
  std::string slot_save_path;
};

class Server {
 public:
  // Fails with InvalidArgument for bad options (parallel < 1, queue < 0, ...).
  static Result<std::unique_ptr<Server>> create(ServerOptions options);
  ~Server();

  // Binds the listening socket, without port sharing: Unavailable, naming the address and why
  // ("127.0.0.1:8080 is already in use ..."), when it cannot.
  Status bind();
  int port() const;
  // Makes the model available: opens the sessions (and a session of `draft`, a draft program for
  // speculative decoding, beside each). Until then model endpoints answer 503.
  Status set_model(std::unique_ptr<Engine> engine, ProgramChatTemplate chat, std::unique_ptr<Engine> draft = nullptr);
  // Serves until stop() (from another thread or a signal handler's thread); returns at once when
  // stop() came first.
  Status listen();
  // Stops accepting, and ends the requests in flight: a generation after its current token, a wait
  // for a session at its next poll, each answering 503 `shutting_down` (in the body of a response
  // already started). Any thread, any time, before or during listen(); listen() returns once the
  // connections' workers have finished.
  void stop();

 private:
  class Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace staticlm::server
