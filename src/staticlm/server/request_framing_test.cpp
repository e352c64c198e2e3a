// SPDX-License-Identifier: Apache-2.0
// refuse_framing: what the server refuses from a request's method and headers alone, before
// reading its body.
#include "staticlm/server/request_framing.h"

#include <gtest/gtest.h>

namespace staticlm::server {
namespace {

int refused_with(const RequestFraming& framing) {
  const std::optional<ApiError> error = refuse_framing(framing);
  return error ? error->http_status : 0;
}

TEST(RequestFramingTest, APostIsRead) {
  // Its length is checked as it is read, whichever the framing (http_server.cpp).
  EXPECT_EQ(refused_with({"POST", {"1000000000000"}, {}, "application/json"}), 0);
  EXPECT_EQ(refused_with({"POST", {}, {"chunked"}, "application/json"}), 0);
  EXPECT_EQ(refused_with({"POST", {}, {" Chunked "}, ""}), 0);
  EXPECT_EQ(refused_with({"POST", {}, {}, ""}), 0);
  EXPECT_EQ(refused_with({"GET", {}, {}, ""}), 0);
  EXPECT_EQ(refused_with({"GET", {"0"}, {}, ""}), 0);
}

TEST(RequestFramingTest, TheTooLargeAnswer) {
  const ApiError error = body_too_large(1000);
  EXPECT_EQ(error.http_status, 413);
  EXPECT_EQ(error.message, "the request body exceeds the limit of 1000 bytes (serve --max-body-bytes)");
  EXPECT_EQ(error.code, "request_too_large");
}

TEST(RequestFramingTest, AmbiguousFramingIs400) {
  EXPECT_EQ(refused_with({"POST", {"10", "10"}, {}, ""}), 400);
  EXPECT_EQ(refused_with({"POST", {"10"}, {"chunked"}, ""}), 400);
  EXPECT_EQ(refused_with({"POST", {"-1"}, {}, ""}), 400);
  EXPECT_EQ(refused_with({"POST", {"1e3"}, {}, ""}), 400);
  EXPECT_EQ(refused_with({"POST", {""}, {}, ""}), 400);
  EXPECT_EQ(refused_with({"POST", {"99999999999999999999999"}, {}, ""}), 400) << "past 2^64";
}

TEST(RequestFramingTest, TransferCodingsOtherThanChunkedAre501) {
  EXPECT_EQ(refused_with({"POST", {}, {"gzip, chunked"}, ""}), 501);
  EXPECT_EQ(refused_with({"POST", {}, {"identity"}, ""}), 501);
  EXPECT_EQ(refused_with({"POST", {}, {"chunked", "chunked"}, ""}), 501);
  const std::optional<ApiError> error = refuse_framing({"POST", {}, {"gzip"}, ""});
  ASSERT_TRUE(error);
  EXPECT_EQ(error->message,
            "Transfer-Encoding 'gzip' is not supported: send the body with Content-Length, or as "
            "'Transfer-Encoding: chunked' alone");
}

TEST(RequestFramingTest, ABodyOnARequestThatTakesNoneIs400) {
  EXPECT_EQ(refused_with({"GET", {"5"}, {}, ""}), 400);
  EXPECT_EQ(refused_with({"GET", {}, {"chunked"}, ""}), 400);
  EXPECT_EQ(refused_with({"HEAD", {"5"}, {}, ""}), 400);
}

TEST(RequestFramingTest, MethodsWithoutEndpointsAre405BeforeTheirBodyIsRead) {
  // httplib reads a PUT / PATCH / DELETE body whole before finding that no handler takes it.
  for (const char* method : {"PUT", "PATCH", "DELETE", "PRI", "BREW"}) {
    EXPECT_EQ(refused_with({method, {}, {"chunked"}, ""}), 405) << method;
    EXPECT_EQ(refused_with({method, {}, {}, ""}), 405) << method;
  }
}

TEST(RequestFramingTest, MultipartIs415) {
  EXPECT_EQ(refused_with({"POST", {"10"}, {}, "multipart/form-data; boundary=x"}), 415);
  EXPECT_EQ(refused_with({"POST", {"10"}, {}, "Multipart/Form-Data"}), 415);
}

TEST(RequestFramingTest, AnnouncesBody) {
  EXPECT_FALSE(announces_body({"POST", {}, {}, ""}));
  EXPECT_FALSE(announces_body({"POST", {"0"}, {}, ""}));
  EXPECT_TRUE(announces_body({"POST", {"1"}, {}, ""}));
  EXPECT_TRUE(announces_body({"POST", {}, {"chunked"}, ""}));
  EXPECT_TRUE(announces_body({"POST", {"junk"}, {}, ""}));
}

}  // namespace
}  // namespace staticlm::server
