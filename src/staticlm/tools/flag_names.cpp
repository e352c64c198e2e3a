// SPDX-License-Identifier: Apache-2.0
#include "staticlm/tools/flag_names.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace staticlm::cli {

Status with_flag_names(const Status& status, std::span<const std::pair<std::string_view, std::string_view>> flags) {
  // Every occurrence is found in the library's message as it came, and the notes are inserted in
  // one pass afterwards: a note never becomes text that another search could match.
  const std::string& message = status.message();
  auto is_name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-'; };
  // A name inside a path or a file name ("runs/max_cache_len/model.slm") is not the parameter.
  auto in_path = [&](size_t at, size_t end) {
    const bool slash_or_dot_before = at > 0 && (message[at - 1] == '/' || message[at - 1] == '.');
    const bool slash_after = end < message.size() && message[end] == '/';
    const bool dot_then_more =
        end + 1 < message.size() && message[end] == '.' && !std::isspace(static_cast<unsigned char>(message[end + 1]));
    return slash_or_dot_before || slash_after || dot_then_more;
  };
  std::vector<std::pair<size_t, std::string>> notes;  // (where, " (--flag)")
  for (const auto& [parameter, flag] : flags) {
    if (parameter.empty()) {
      continue;
    }
    const std::string note = str_cat(" (", flag, ")");
    for (size_t at = message.find(parameter); at != std::string::npos;
         at = message.find(parameter, at + parameter.size())) {
      size_t end = at + parameter.size();
      // Whole names only: not "max_new_tokens_x", not the "stride" of "--stride".
      if ((at > 0 && is_name_char(message[at - 1])) || (end < message.size() && is_name_char(message[end])) ||
          in_path(at, end)) {
        continue;
      }
      if (end < message.size() && message[end] == '\'') {
        ++end;  // after the closing quote of 'parameter'
      }
      if (message.compare(end, note.size(), note) != 0) {
        notes.emplace_back(end, note);
      }
    }
  }
  std::sort(notes.begin(), notes.end());
  notes.erase(std::unique(notes.begin(), notes.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
              notes.end());
  std::string annotated;
  size_t copied = 0;
  for (const auto& [at, note] : notes) {
    annotated.append(message, copied, at - copied).append(note);
    copied = at;
  }
  annotated.append(message, copied, std::string::npos);
  return Status(status.code(), std::move(annotated));
}

}  // namespace staticlm::cli
