// SPDX-License-Identifier: Apache-2.0
// libFuzzer: raw bytes on a connection to the server, as any client could send them (request
// lines, headers, Content-Length and chunked bodies, pipelined requests, garbage). The server runs
// in this process without a model, its body limit small. Each input is sent, the client's side of
// the connection shut, and the server must answer with HTTP responses and close within a few
// seconds: never crash, hang, or buffer a body past its limit (the run's RSS limit).
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "staticlm/server/http_server.h"

namespace {

constexpr int kAnswerSeconds = 5;

int server_port() {
  static const int port = [] {
    staticlm::server::ServerOptions options;
    options.port = 0;
    options.max_body_bytes = 4096;
    auto created = staticlm::server::Server::create(options);
    if (!created.ok() || !(*created)->bind().ok()) {
      __builtin_trap();
    }
    // Never destroyed: it serves until the process exits.
    staticlm::server::Server* server = created->release();
    std::thread([server] { (void)server->listen(); }).detach();
    return server->port();
  }();
  return port;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int sock = socket(AF_INET, SOCK_STREAM, 0);
  if (sock < 0) {
    return 0;
  }
  timeval timeout{kAnswerSeconds, 0};
  setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(server_port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(sock, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    close(sock);
    return 0;
  }
  // The server may answer and close before it has read everything: a failed send is fine.
  (void)send(sock, data, size, MSG_NOSIGNAL);
  shutdown(sock, SHUT_WR);
  std::string answer;
  char buffer[4096];
  while (true) {
    const ssize_t got = recv(sock, buffer, sizeof(buffer), 0);
    if (got > 0) {
      answer.append(buffer, static_cast<size_t>(got));
      continue;
    }
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      __builtin_trap();  // neither an answer nor a close long after the client finished: a hang
    }
    break;  // closed (or reset)
  }
  close(sock);
  if (!answer.empty() && answer.rfind("HTTP/1.1 ", 0) != 0) {
    __builtin_trap();  // whatever came back must be a response
  }
  return 0;
}
