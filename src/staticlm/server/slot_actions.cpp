// SPDX-License-Identifier: Apache-2.0
#include "staticlm/server/slot_actions.h"

#include <cctype>
#include <chrono>
#include <filesystem>
#include <mutex>

#include "staticlm/llm/session_file.h"
#include "staticlm/server/completion_request.h"

namespace staticlm::server {
namespace {

constexpr size_t kMaxFilenameBytes = 255;  // NAME_MAX of the common file systems

// Two saves of one name from two slots would write the same temporary file (session_file.cpp), and
// a restore could map a file a save is renaming over: file work of the slot actions takes turns.
// They are rare and short beside a generation.
std::mutex& file_mutex() {
  static std::mutex mutex;
  return mutex;
}

// A client's text echoed in an error: on one line (bytes that are not printable ASCII show as '?'),
// and short.
std::string quoted(std::string_view text) {
  constexpr size_t kShown = 64;
  std::string out = "'";
  for (char c : text.substr(0, kShown)) {
    out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  }
  out += text.size() > kShown ? "...'" : "'";
  return out;
}

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

Result<size_t> parse_slot(std::string_view text, size_t slots) {
  size_t slot = 0;
  bool valid = !text.empty() && text.size() <= 9;
  for (char c : text) {
    valid = valid && std::isdigit(static_cast<unsigned char>(c));
    slot = slot * 10 + static_cast<size_t>(c - '0');
  }
  if (!valid || slot >= slots) {
    return invalid_argument("'id_slot': expected a slot id in [0, ", slots, "), found ", quoted(text));
  }
  return slot;
}

Result<std::string> parse_filename(std::string_view body, int max_json_depth) {
  auto json = parse_request_json(body, max_json_depth);
  if (!json.ok()) {
    return invalid_argument("'filename': expected a body {\"filename\": NAME}: ", json.status().message());
  }
  if (!json->contains("filename") || !(*json)["filename"].is_string()) {
    return invalid_argument("'filename': expected a string, the session file's name in the slot save directory");
  }
  std::string name = (*json)["filename"].get<std::string>();
  STATICLM_RETURN_IF_ERROR(check_slot_filename(name));
  return name;
}

// The session file's messages name its path; a client sees the name it gave, not the server's
// directory.
std::string client_message(std::string message, const std::string& path, std::string_view name) {
  for (size_t at = message.find(path); at != std::string::npos; at = message.find(path, at + name.size())) {
    message.replace(at, path.size(), name);
  }
  return message;
}

Result<Json> save(LlmSession& session, const ProgramFile& program, size_t slot, const std::string& name,
                  const std::string& path) {
  const auto start = std::chrono::steady_clock::now();
  const auto tokens = static_cast<int64_t>(session.cached_tokens().size());
  std::error_code error;
  uintmax_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(file_mutex());
    const Status saved = save_session_file(session, program, path);
    if (!saved.ok()) {
      return Status(saved.code(), client_message(saved.message(), path, name));
    }
    bytes = std::filesystem::file_size(path, error);
  }
  return Json{{"id_slot", slot},
              {"filename", name},
              {"n_saved", tokens},
              {"n_written", error ? 0 : bytes},
              {"timings", {{"save_ms", milliseconds_since(start)}}}};
}

Result<Json> restore(LlmSession& session, const ProgramFile& program, size_t slot, const std::string& name,
                     const std::string& path) {
  const auto start = std::chrono::steady_clock::now();
  std::error_code error;
  uintmax_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(file_mutex());
    const Status restored = restore_session_file(session, program, path);
    switch (restored.code()) {
      case StatusCode::kOk: break;
      case StatusCode::kNotFound:
        return invalid_argument("'filename': no session file '", name, "' in the slot save directory");
      // What the client chose: a file of another program, a damaged one, one too long for this
      // context. The session is as it was.
      case StatusCode::kInvalidArgument:
      case StatusCode::kDataLoss:
        return invalid_argument("'filename': ", client_message(restored.message(), path, name));
      default: return Status(restored.code(), client_message(restored.message(), path, name));
    }
    bytes = std::filesystem::file_size(path, error);
  }
  return Json{{"id_slot", slot},
              {"filename", name},
              {"n_restored", session.position()},
              {"n_read", error ? 0 : bytes},
              {"timings", {{"restore_ms", milliseconds_since(start)}}}};
}

}  // namespace

Status check_slot_filename(std::string_view name) {
  bool plain = !name.empty() && name.size() <= kMaxFilenameBytes && name.front() != '.' &&
               name.find("..") == std::string_view::npos;
  for (char c : name) {
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-');
  }
  if (!plain) {
    return invalid_argument(
        "'filename': expected a plain file name (1 to 255 letters, digits, '.', '_' or '-'; no path separators "
        "or '..', not starting with '.'), found ",
        quoted(name));
  }
  return ok_status();
}

Result<Json> run_slot_action(const SlotActionRequest& request, SessionPool& pool, const ProgramFile& program,
                             const std::string& save_dir, int max_json_depth) {
  STATICLM_ASSIGN_OR_RETURN(const size_t slot, parse_slot(request.id_slot, static_cast<size_t>(pool.size())));
  const std::string_view action = request.action;
  if (action != "save" && action != "restore" && action != "erase") {
    return invalid_argument("'action': expected save, restore or erase, found ", quoted(action));
  }
  std::string name;
  if (action != "erase") {
    STATICLM_ASSIGN_OR_RETURN(name, parse_filename(request.body, max_json_depth));
  }
  std::optional<SessionLease> lease = pool.try_acquire_slot(slot);
  if (!lease) {
    return resource_exhausted("slot ", slot, " is generating; retry once it is idle (GET /slots)");
  }
  LlmSession& session = lease->session();
  if (action == "erase") {
    const int64_t erased = session.position();
    session.reset();
    return Json{{"id_slot", slot}, {"n_erased", erased}};
  }
  const std::string path = (std::filesystem::path(save_dir) / name).string();
  if (action == "save") {
    return save(session, program, slot, name, path);
  }
  return restore(session, program, slot, name, path);
}

}  // namespace staticlm::server
