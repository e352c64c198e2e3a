// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/logging.h"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

using ::testing::IsSubstring;

struct Record {
  LogLevel level;
  std::string message;
  bool operator==(const Record&) const = default;
};

// Logging is process-wide: each test starts from the defaults and puts them back.
class LoggingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_sink_ = set_log_sink(LogSink());
    saved_level_ = log_level();
    set_log_level(LogLevel::kWarning);
  }
  void TearDown() override {
    set_log_sink(std::move(saved_sink_));
    set_log_level(saved_level_);
  }

  LogSink recording_sink() {
    return [this](LogLevel level, std::string_view message) { records_.push_back({level, std::string(message)}); };
  }

  std::vector<Record> records_;

 private:
  LogSink saved_sink_;
  LogLevel saved_level_ = LogLevel::kWarning;
};

TEST_F(LoggingTest, DefaultLevelIsWarning) {
  EXPECT_EQ(log_level(), LogLevel::kWarning);
}

TEST_F(LoggingTest, SinkReceivesMessagesAtOrAboveLevel) {
  set_log_sink(recording_sink());
  log_message(LogLevel::kDebug, "debug dropped");
  log_message(LogLevel::kInfo, "info dropped");
  log_message(LogLevel::kWarning, "warning kept");
  log_message(LogLevel::kError, "error kept");
  EXPECT_EQ(records_, (std::vector<Record>{{LogLevel::kWarning, "warning kept"}, {LogLevel::kError, "error kept"}}));
}

TEST_F(LoggingTest, LevelChangesWhatReachesTheSink) {
  set_log_sink(recording_sink());
  set_log_level(LogLevel::kDebug);
  EXPECT_EQ(log_level(), LogLevel::kDebug);
  log_message(LogLevel::kDebug, "d");
  log_message(LogLevel::kInfo, "i");
  set_log_level(LogLevel::kError);
  log_message(LogLevel::kWarning, "w dropped");
  log_message(LogLevel::kError, "e");
  EXPECT_EQ(records_, (std::vector<Record>{{LogLevel::kDebug, "d"}, {LogLevel::kInfo, "i"}, {LogLevel::kError, "e"}}));
}

TEST_F(LoggingTest, HelpersConcatenateAndRespectLevel) {
  set_log_sink(recording_sink());
  log_info("info ", 1, " dropped");
  log_warning("tensor '", "w", "' has ", 3, " dims");
  set_log_level(LogLevel::kInfo);
  log_info("loaded ", 42, " tensors");
  set_log_level(LogLevel::kError);
  log_warning("dropped");
  EXPECT_EQ(records_, (std::vector<Record>{{LogLevel::kWarning, "tensor 'w' has 3 dims"},
                                           {LogLevel::kInfo, "loaded 42 tensors"}}));
}

TEST_F(LoggingTest, SetLogSinkReturnsThePrevious) {
  std::vector<std::string> first_seen;
  std::vector<std::string> second_seen;
  LogSink first = [&](LogLevel, std::string_view message) { first_seen.emplace_back(message); };
  LogSink second = [&](LogLevel, std::string_view message) { second_seen.emplace_back(message); };

  LogSink previous = set_log_sink(first);
  EXPECT_FALSE(previous) << "the default is reported as an empty function";
  previous = set_log_sink(second);
  ASSERT_TRUE(previous);
  // The returned function is the one that was installed: calling it reaches `first`.
  previous(LogLevel::kError, "direct");
  log_message(LogLevel::kError, "to second");
  EXPECT_EQ(first_seen, (std::vector<std::string>{"direct"}));
  EXPECT_EQ(second_seen, (std::vector<std::string>{"to second"}));

  // Reinstalling the returned sink restores it.
  LogSink removed = set_log_sink(std::move(previous));
  log_message(LogLevel::kError, "to first");
  EXPECT_EQ(first_seen, (std::vector<std::string>{"direct", "to first"}));
  ASSERT_TRUE(removed);
  removed(LogLevel::kError, "direct to second");
  EXPECT_EQ(second_seen, (std::vector<std::string>{"to second", "direct to second"}));
}

TEST_F(LoggingTest, DefaultSinkWritesToStderr) {
  testing::internal::CaptureStderr();
  log_message(LogLevel::kWarning, "disk almost full");
  log_message(LogLevel::kError, "cannot map 'x.bin'");
  log_message(LogLevel::kInfo, "not shown");
  const std::string written = testing::internal::GetCapturedStderr();
  EXPECT_PRED_FORMAT2(IsSubstring, "warning: disk almost full\n", written);
  EXPECT_PRED_FORMAT2(IsSubstring, "error: cannot map 'x.bin'\n", written);
  EXPECT_PRED_FORMAT2(IsSubstring, "staticlm", written);
  EXPECT_EQ(written.find("not shown"), std::string::npos);
}

TEST_F(LoggingTest, EmptySinkRestoresDefault) {
  set_log_sink(recording_sink());
  LogSink replaced = set_log_sink(LogSink());
  EXPECT_TRUE(replaced);
  testing::internal::CaptureStderr();
  log_message(LogLevel::kError, "back on stderr");
  const std::string written = testing::internal::GetCapturedStderr();
  EXPECT_PRED_FORMAT2(IsSubstring, "back on stderr", written);
  EXPECT_TRUE(records_.empty());
}

TEST_F(LoggingTest, NullSinkSilences) {
  set_log_sink([](LogLevel, std::string_view) {});
  testing::internal::CaptureStderr();
  log_message(LogLevel::kError, "silenced");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace staticlm
