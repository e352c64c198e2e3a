// SPDX-License-Identifier: Apache-2.0
// libFuzzer: with_flag_names over any message and any parameter / flag table (the first bytes
// choose the table, the rest is the message). It must end (a note that holds its parameter's
// name once looped forever), and must only insert: the message is the result with every inserted
// note taken out, at most one note per place a name ends.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "staticlm/tools/flag_names.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // "name=flag;name=flag;...\n message": tables as the commands write them, and hostile ones.
  const size_t newline = input.find('\n');
  const std::string_view table = newline == std::string_view::npos ? std::string_view() : input.substr(0, newline);
  const std::string_view message = newline == std::string_view::npos ? input : input.substr(newline + 1);
  std::vector<std::pair<std::string_view, std::string_view>> flags;
  size_t start = 0;
  while (start < table.size() && flags.size() < 8) {
    size_t end = table.find(';', start);
    end = end == std::string_view::npos ? table.size() : end;
    const std::string_view entry = table.substr(start, end - start);
    const size_t equals = entry.find('=');
    if (equals != std::string_view::npos) {
      flags.emplace_back(entry.substr(0, equals), entry.substr(equals + 1));
    }
    start = end + 1;
  }
  const staticlm::Status annotated = staticlm::cli::with_flag_names(
      staticlm::Status(staticlm::StatusCode::kInvalidArgument, std::string(message)), flags);
  const std::string& out = annotated.message();
  // Taking the notes back out, left to right, must give the message.
  size_t longest_note = 0;
  for (const auto& [parameter, flag] : flags) {
    longest_note = std::max(longest_note, flag.size() + 3);
  }
  if (out.size() > message.size() + (message.size() + 1) * longest_note) {
    __builtin_trap();
  }
  std::vector<std::string> notes;
  for (const auto& [parameter, flag] : flags) {
    notes.push_back(" (" + std::string(flag) + ")");
  }
  // Search (out position, message position) pairs: a character of both, or a note of out alone.
  std::unordered_set<uint64_t> seen;
  std::vector<std::pair<size_t, size_t>> pending = {{0, 0}};
  bool matched = false;
  constexpr size_t kMostStates = 1 << 20;  // a pathological table: leave the check, not the run
  while (!pending.empty() && !matched && seen.size() < kMostStates) {
    const auto [in_out, in_message] = pending.back();
    pending.pop_back();
    if (!seen.insert((static_cast<uint64_t>(in_out) << 32) | in_message).second) {
      continue;
    }
    if (in_out == out.size()) {
      matched = in_message == message.size();
      continue;
    }
    if (in_message < message.size() && out[in_out] == message[in_message]) {
      pending.emplace_back(in_out + 1, in_message + 1);
    }
    for (const std::string& note : notes) {
      if (out.compare(in_out, note.size(), note) == 0) {
        pending.emplace_back(in_out + note.size(), in_message);
      }
    }
  }
  if (!matched && seen.size() < kMostStates) {
    __builtin_trap();  // something other than flag notes was added, or the message changed
  }
  return 0;
}
