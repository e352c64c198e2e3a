// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/status.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/core/result.h"
#include "staticlm/core/str_cat.h"

namespace staticlm {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status status;
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kOk);
  EXPECT_EQ(status.message(), "");
  EXPECT_EQ(status.to_string(), "OK");
  EXPECT_TRUE(ok_status().ok());
}

TEST(StatusTest, EveryCodeHasItsOwnName) {
  const std::vector<std::pair<StatusCode, std::string>> expected = {
      {StatusCode::kOk, "OK"},
      {StatusCode::kInvalidArgument, "InvalidArgument"},
      {StatusCode::kNotFound, "NotFound"},
      {StatusCode::kOutOfRange, "OutOfRange"},
      {StatusCode::kFailedPrecondition, "FailedPrecondition"},
      {StatusCode::kUnimplemented, "Unimplemented"},
      {StatusCode::kUnavailable, "Unavailable"},
      {StatusCode::kResourceExhausted, "ResourceExhausted"},
      {StatusCode::kDataLoss, "DataLoss"},
      {StatusCode::kInternal, "Internal"},
  };
  for (const auto& [code, name] : expected) {
    EXPECT_EQ(status_code_name(code), name);
  }
}

TEST(StatusTest, HelpersSetCodeAndConcatenateMessage) {
  struct Case {
    Status status;
    StatusCode code;
  };
  const std::vector<Case> cases = {
      {invalid_argument("a", 1, "b"), StatusCode::kInvalidArgument},
      {not_found("a", 1, "b"), StatusCode::kNotFound},
      {out_of_range("a", 1, "b"), StatusCode::kOutOfRange},
      {failed_precondition("a", 1, "b"), StatusCode::kFailedPrecondition},
      {unimplemented("a", 1, "b"), StatusCode::kUnimplemented},
      {unavailable("a", 1, "b"), StatusCode::kUnavailable},
      {resource_exhausted("a", 1, "b"), StatusCode::kResourceExhausted},
      {data_loss("a", 1, "b"), StatusCode::kDataLoss},
      {internal_error("a", 1, "b"), StatusCode::kInternal},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(c.status.ok());
    EXPECT_EQ(c.status.code(), c.code);
    EXPECT_EQ(c.status.message(), "a1b");
  }
}

TEST(StatusTest, ToStringPrefixesCodeName) {
  Status status = invalid_argument("input 'k_cache_3': expected [1,4], found [1,5]");
  EXPECT_EQ(status.to_string(), "InvalidArgument: input 'k_cache_3': expected [1,4], found [1,5]");
  EXPECT_EQ(data_loss("truncated").to_string(), "DataLoss: truncated");
}

TEST(StatusTest, WithContextPrependsAndKeepsCode) {
  Status status = not_found("tensor 'w' missing");
  Status wrapped = status.with_context("loading 'model.bin'");
  EXPECT_EQ(wrapped.code(), StatusCode::kNotFound);
  EXPECT_EQ(wrapped.message(), "loading 'model.bin': tensor 'w' missing");
  // The original is unchanged: with_context returns a copy.
  EXPECT_EQ(status.message(), "tensor 'w' missing");
  Status twice = wrapped.with_context("export");
  EXPECT_EQ(twice.message(), "export: loading 'model.bin': tensor 'w' missing");
}

TEST(StatusTest, WithContextOnOkStaysOk) {
  Status wrapped = ok_status().with_context("anything");
  EXPECT_TRUE(wrapped.ok());
  EXPECT_EQ(wrapped.message(), "");
  EXPECT_EQ(wrapped.to_string(), "OK");
}

TEST(StrCatTest, ShapeStringAndJoin) {
  const std::vector<int64_t> shape = {1, 4, 512, 64};
  EXPECT_EQ(shape_string(shape), "[1,4,512,64]");
  EXPECT_EQ(shape_string(std::vector<int64_t>{}), "[]");
  EXPECT_EQ(shape_string(std::vector<int64_t>{-3}), "[-3]");
  const std::vector<std::string> pieces = {"a", "b", "c"};
  EXPECT_EQ(join(pieces, ", "), "a, b, c");
  EXPECT_EQ(join(std::vector<std::string>{}, ", "), "");
  EXPECT_EQ(join(std::vector<std::string>{"only"}, ", "), "only");
  EXPECT_EQ(str_cat("x=", 3, " y=", 2.5, ' ', std::string("z")), "x=3 y=2.5 z");
}

// --- Result ---

TEST(ResultTest, HoldsValue) {
  Result<int> result = 42;
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result.status().ok());
  EXPECT_EQ(result.value(), 42);
  EXPECT_EQ(*result, 42);
  *result = 7;
  EXPECT_EQ(result.value(), 7);
}

TEST(ResultTest, HoldsErrorStatus) {
  Result<int> result = out_of_range("index 9 outside [0, 4)");
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(result.status().message(), "index 9 outside [0, 4)");
}

TEST(ResultTest, OkStatusWithoutValueBecomesInternal) {
  Result<int> result = ok_status();
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInternal);
  EXPECT_PRED_FORMAT2(::testing::IsSubstring, "OK status without a value", result.status().message());
}

TEST(ResultTest, ConvertingConstructor) {
  Result<std::string> result = "hello";  // const char* -> std::string
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(*result, "hello");
  EXPECT_EQ(result->size(), 5u);
}

TEST(ResultTest, MoveOnlyValue) {
  Result<std::unique_ptr<int>> result = std::make_unique<int>(5);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(**result, 5);
  std::unique_ptr<int> taken = std::move(result).value();
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(*taken, 5);

  Result<std::unique_ptr<int>> failed = unavailable("no device");
  EXPECT_FALSE(failed.ok());
  Status moved_status = std::move(failed).status();
  EXPECT_EQ(moved_status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(moved_status.message(), "no device");
}

// --- Macros ---

Status fail_if(bool fail, int* calls) {
  ++*calls;
  return fail ? invalid_argument("failed on request") : ok_status();
}

Status two_steps(bool fail_first, bool fail_second, int* calls, bool* reached_end) {
  STATICLM_RETURN_IF_ERROR(fail_if(fail_first, calls));
  STATICLM_RETURN_IF_ERROR(fail_if(fail_second, calls).with_context("second"));
  *reached_end = true;
  return ok_status();
}

TEST(MacroTest, ReturnIfErrorReturnsEarly) {
  int calls = 0;
  bool reached_end = false;
  Status status = two_steps(true, false, &calls, &reached_end);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "failed on request");
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(reached_end);

  calls = 0;
  status = two_steps(false, true, &calls, &reached_end);
  EXPECT_EQ(status.message(), "second: failed on request");
  EXPECT_EQ(calls, 2);
  EXPECT_FALSE(reached_end);
}

TEST(MacroTest, ReturnIfErrorContinuesOnOk) {
  int calls = 0;
  bool reached_end = false;
  Status status = two_steps(false, false, &calls, &reached_end);
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(reached_end);
}

Result<int> parse_positive(int value) {
  if (value <= 0) {
    return invalid_argument("value ", value, " is not positive");
  }
  return value;
}

Result<std::unique_ptr<int>> make_boxed(int value) {
  if (value < 0) {
    return not_found("no box for ", value);
  }
  return std::make_unique<int>(value);
}

Result<int> sum_two(int a, int b, bool* reached_end) {
  STATICLM_ASSIGN_OR_RETURN(int first, parse_positive(a));
  // Two uses in one function: the temporaries must not collide.
  STATICLM_ASSIGN_OR_RETURN(int second, parse_positive(b));
  *reached_end = true;
  return first + second;
}

Result<int> unbox(int value) {
  std::unique_ptr<int> box;
  STATICLM_ASSIGN_OR_RETURN(box, make_boxed(value));  // assigns to an existing variable
  return *box * 2;
}

TEST(MacroTest, AssignOrReturnYieldsValue) {
  bool reached_end = false;
  Result<int> result = sum_two(3, 4, &reached_end);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ(*result, 7);
  EXPECT_TRUE(reached_end);
}

TEST(MacroTest, AssignOrReturnPropagatesError) {
  bool reached_end = false;
  Result<int> result = sum_two(3, -2, &reached_end);
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(result.status().message(), "value -2 is not positive");
  EXPECT_FALSE(reached_end);
}

TEST(MacroTest, AssignOrReturnWithMoveOnlyValue) {
  Result<int> good = unbox(21);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 42);
  Result<int> bad = unbox(-1);
  EXPECT_EQ(bad.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(bad.status().message(), "no box for -1");
}

}  // namespace
}  // namespace staticlm
