// SPDX-License-Identifier: Apache-2.0
#include "staticlm/server/request_framing.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "staticlm/core/str_cat.h"

namespace staticlm::server {
namespace {

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  return text;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Content-Length is 1*DIGIT (RFC 9110 §8.6); nullopt for anything else, or a value past 2^64.
std::optional<uint64_t> parse_content_length(std::string_view value) {
  value = trimmed(value);
  uint64_t length = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), length);
  if (value.empty() || error != std::errc() || end != value.data() + value.size()) {
    return std::nullopt;
  }
  return length;
}

ApiError refusal(int http_status, std::string message, std::string code) {
  ApiError error;
  error.http_status = http_status;
  error.message = std::move(message);
  error.code = std::move(code);
  return error;
}

}  // namespace

ApiError body_too_large(size_t max_body_bytes) {
  return refusal(413,
                 str_cat("the request body exceeds the limit of ", max_body_bytes, " bytes (serve --max-body-bytes)"),
                 "request_too_large");
}

bool announces_body(const RequestFraming& framing) {
  if (!framing.transfer_encodings.empty()) {
    return true;
  }
  return std::any_of(framing.content_lengths.begin(), framing.content_lengths.end(),
                     [](std::string_view value) { return parse_content_length(value) != std::optional<uint64_t>(0); });
}

std::optional<ApiError> refuse_framing(const RequestFraming& framing) {
  const std::string_view method = framing.method;
  const bool without_body = method == "GET" || method == "HEAD" || method == "OPTIONS";
  if (!without_body && method != "POST") {
    return refusal(405, str_cat("method ", method, " is not allowed: the endpoints take GET or POST"),
                   "method_not_allowed");
  }
  if (framing.content_lengths.size() > 1) {
    return refusal(400, "the request has more than one Content-Length header", "bad_framing");
  }
  if (!framing.content_lengths.empty() && !framing.transfer_encodings.empty()) {
    return refusal(400, "the request has both Content-Length and Transfer-Encoding headers", "bad_framing");
  }
  if (!framing.transfer_encodings.empty()) {
    if (framing.transfer_encodings.size() > 1 ||
        !equals_ignoring_case(trimmed(framing.transfer_encodings[0]), "chunked")) {
      std::string codings;
      for (std::string_view value : framing.transfer_encodings) {
        codings += str_cat(codings.empty() ? "" : ", ", trimmed(value));
      }
      return refusal(501,
                     str_cat("Transfer-Encoding '", codings, "' is not supported: send the body with ",
                             "Content-Length, or as 'Transfer-Encoding: chunked' alone"),
                     "unsupported_transfer_encoding");
    }
  }
  if (!framing.content_lengths.empty() && !parse_content_length(framing.content_lengths[0])) {
    return refusal(400, str_cat("Content-Length '", trimmed(framing.content_lengths[0]), "' is not a byte count"),
                   "bad_framing");
  }
  if (without_body && announces_body(framing)) {
    return refusal(400, str_cat("a ", method, " request carries no body"), "bad_framing");
  }
  const std::string_view type = trimmed(framing.content_type);
  constexpr std::string_view kMultipart = "multipart/form-data";
  if (type.size() >= kMultipart.size() && equals_ignoring_case(type.substr(0, kMultipart.size()), kMultipart)) {
    return refusal(415, "multipart/form-data bodies are not accepted: send JSON (Content-Type: application/json)",
                   "unsupported_media_type");
  }
  return std::nullopt;
}

}  // namespace staticlm::server
