// SPDX-License-Identifier: Apache-2.0
// llama-server's slot actions: POST /slots/{id}?action=save|restore|erase. Save writes a session's
// cached tokens and caches to a session file (llm/session_file.h) in the --slot-save-path
// directory, restore puts one back so that a request whose prompt starts with its tokens prefills
// only the rest, erase forgets what the session holds. File names come from clients: only plain
// names inside that directory are accepted.
#pragma once

#include <string>
#include <string_view>

#include "staticlm/core/result.h"
#include "staticlm/format/program_file.h"
#include "staticlm/server/openai_json.h"
#include "staticlm/server/session_pool.h"

namespace staticlm::server {

struct SlotActionRequest {
  std::string_view id_slot;  // the path's {id}, as sent
  std::string_view action;   // the query's action, as sent ("" when absent)
  std::string_view body;     // the request body (JSON; may be empty for erase)
};

// Runs one slot action on `pool`'s sessions, files under `save_dir` (not empty: the caller answers
// 501 without one). The reply is llama-server's: save {id_slot, filename, n_saved, n_written,
// timings: {save_ms}}, restore {id_slot, filename, n_restored, n_read, timings: {restore_ms}},
// erase {id_slot, n_erased}. Errors, each naming the field at fault: InvalidArgument for a bad slot
// id, action, body or file name, for a file that does not exist, is damaged, or was saved with
// another program (naming what differs); ResourceExhausted when the slot is generating (nothing
// is touched); Unavailable when the file cannot be written. Thread-safe.
Result<Json> run_slot_action(const SlotActionRequest& request, SessionPool& pool, const ProgramFile& program,
                             const std::string& save_dir, int max_json_depth);

// The check run_slot_action applies to a client's file name: 1 to 255 letters, digits, '.', '_' or
// '-', not starting with '.', without "..". InvalidArgument naming 'filename' otherwise.
Status check_slot_filename(std::string_view name);

}  // namespace staticlm::server
