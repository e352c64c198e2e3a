// SPDX-License-Identifier: Apache-2.0
// What the server decides from a request's method and headers before it reads a byte of the body:
// whether the request may carry a body at all, and in which framing. Debian 12's cpp-httplib (0.11)
// buffers a chunked body whole whatever its payload limit, and reads the body of any PUT / PATCH /
// DELETE it has no handler for; so the server refuses here whatever it will not read, and reads
// every body it accepts itself, counting (http_server.cpp). A refused request's connection is
// closed: its unread body must never be parsed as the next request.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "staticlm/server/openai_json.h"

namespace staticlm::server {

struct RequestFraming {
  std::string_view method;
  std::vector<std::string_view> content_lengths;     // every Content-Length header's value
  std::vector<std::string_view> transfer_encodings;  // every Transfer-Encoding header's value
  std::string_view content_type;
};

// nullopt when the request may be read (its body then counted against the limit as it arrives,
// whatever its framing). Otherwise the error to answer with: 400 for a malformed or duplicated
// Content-Length, for both Content-Length and Transfer-Encoding, or a body on GET / HEAD / OPTIONS;
// 405 for a method the server has no endpoint for; 415 for multipart/form-data; 501 for a transfer
// coding other than chunked.
std::optional<ApiError> refuse_framing(const RequestFraming& framing);

// True when the request announces a body (a Content-Length other than 0, or a Transfer-Encoding).
bool announces_body(const RequestFraming& framing);

// The message of the 413 answer, the same whichever framing carried the body.
ApiError body_too_large(size_t max_body_bytes);

}  // namespace staticlm::server
