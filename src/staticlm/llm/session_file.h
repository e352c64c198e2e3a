// SPDX-License-Identifier: Apache-2.0
// A session's cached tokens and caches saved to a file and put back, so a long prompt (an app's
// system prompt, a document) costs its prefill once: `run --prompt-cache`, llama.cpp's
// --prompt-cache. The file is bound to the program it was made with: its metadata and a checksum
// of its flatbuffer (the graph, and every weight segment's checksum). Layout, little-endian:
//
//   "STATICLM-SESSION" | u32 version (1) | u64 program checksum | u64 metadata bytes |
//   u64 tokens | u64 cache bytes | metadata text | i32 tokens | cache bytes | u64 checksum
//
// where the metadata text is the program's "key=value\n" lines and the last checksum covers every
// byte before it.
#pragma once

#include <string>

#include "staticlm/core/result.h"
#include "staticlm/format/program_file.h"
#include "staticlm/llm/contract.h"

namespace staticlm {

// Writes `session`'s cached tokens and the used part of its caches to `path` (through a temporary
// file renamed into place, so a reader never sees half a file). Fails with the session's
// Unimplemented for a contract that cannot save, Unavailable naming the path when it cannot be
// written.
Status save_session_file(const LlmSession& session, const ProgramFile& program, const std::string& path);

// Replaces what `session` holds with the file's tokens and caches. NotFound when `path` does not
// exist; DataLoss for a file that is truncated or whose checksum does not match (nothing is
// restored); InvalidArgument when it was made with another program, naming the first metadata
// key that differs (or saying the weights or graph differ) or when it does not fit the session.
Status restore_session_file(LlmSession& session, const ProgramFile& program, const std::string& path);

}  // namespace staticlm
