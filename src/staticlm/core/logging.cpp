// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/logging.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>

namespace staticlm {
namespace {

std::mutex& sink_mutex() {
  static std::mutex mutex;
  return mutex;
}

LogSink& current_sink() {
  static LogSink sink;
  return sink;
}

std::atomic<int> g_level{static_cast<int>(LogLevel::kWarning)};

std::string_view level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
  }
  return "log";
}

}  // namespace

LogSink set_log_sink(LogSink sink) {
  std::lock_guard<std::mutex> lock(sink_mutex());
  return std::exchange(current_sink(), std::move(sink));
}

void set_log_level(LogLevel level) {
  g_level.store(static_cast<int>(level));
}

LogLevel log_level() {
  return static_cast<LogLevel>(g_level.load());
}

void log_message(LogLevel level, std::string_view message) {
  if (level < log_level()) {
    return;
  }
  std::lock_guard<std::mutex> lock(sink_mutex());
  if (current_sink()) {
    current_sink()(level, message);
    return;
  }
  std::string line = str_cat("staticlm ", level_name(level), ": ", message, "\n");
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace staticlm
