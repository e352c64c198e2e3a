// SPDX-License-Identifier: Apache-2.0
// libFuzzer: request bodies for /v1/chat/completions and /v1/completions, and the JSON of
// /tokenize's shape, as a client could send them. The parser must answer with a request or a
// Status, never crash, hang or allocate without bound.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "staticlm/server/completion_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace staticlm::server;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  RequestLimits limits;
  limits.template_uses_tools = size % 2 == 0;
  auto chat = parse_completion_request(body, Endpoint::kChatCompletions, limits);
  if (!chat.ok()) {
    (void)request_error_param(chat.status());
  }
  (void)parse_completion_request(body, Endpoint::kCompletions, limits);
  return 0;
}
