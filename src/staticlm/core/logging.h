// SPDX-License-Identifier: Apache-2.0
// Logging hook. The library never writes to stdout/stderr on its own: it hands each message
// to the installed sink. The default sink writes warnings and errors to stderr; an embedding
// app installs its own (or a null one) with set_log_sink.
#pragma once

#include <functional>
#include <string_view>

#include "staticlm/core/str_cat.h"

namespace staticlm {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

using LogSink = std::function<void(LogLevel level, std::string_view message)>;

// Installs `sink` (an empty function restores the default) and returns the previous one.
LogSink set_log_sink(LogSink sink);

// Messages below this level are dropped before reaching the sink (default: kWarning).
void set_log_level(LogLevel level);
LogLevel log_level();

void log_message(LogLevel level, std::string_view message);

template <typename... Args>
void log_info(const Args&... args) {
  if (log_level() <= LogLevel::kInfo) {
    log_message(LogLevel::kInfo, str_cat(args...));
  }
}
template <typename... Args>
void log_warning(const Args&... args) {
  if (log_level() <= LogLevel::kWarning) {
    log_message(LogLevel::kWarning, str_cat(args...));
  }
}

}  // namespace staticlm
