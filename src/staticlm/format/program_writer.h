// SPDX-License-Identifier: Apache-2.0
// Writes a ProgramSpec as a program file (docs/format.md). The spec is checked first with the
// same rules the reader applies, so the writer never produces a file its reader would refuse.
#pragma once

#include <functional>
#include <string>

#include "staticlm/core/result.h"
#include "staticlm/format/program_spec.h"

namespace staticlm {

struct WriteProgress {
  uint64_t bytes_written = 0;
  uint64_t bytes_total = 0;
};

struct WriteOptions {
  // Called after each segment is written (for a progress bar); may be empty.
  std::function<void(const WriteProgress&)> on_progress;
  // Record a checksum per data segment (format 1.2). False writes the file as format 1.1 did,
  // which compatibility tests need.
  bool record_checksums = true;
};

struct WriteSummary {
  uint64_t file_bytes = 0;
  uint64_t constant_bytes = 0;
  uint64_t named_data_bytes = 0;
  uint64_t largest_segment_bytes = 0;
};

// Writes `spec` to `path` (through a temporary file renamed into place, so a failed write
// never leaves a partial program behind). Fails with InvalidArgument naming the bad part of the
// spec, or Unavailable when the file cannot be written.
Result<WriteSummary> write_program(const ProgramSpec& spec, const std::string& path, const WriteOptions& options = {});

}  // namespace staticlm
