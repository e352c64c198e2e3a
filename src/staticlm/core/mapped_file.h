// SPDX-License-Identifier: Apache-2.0
// MappedFile: a read-only memory mapping of a whole file. Move-only; unmaps on destruction.
// Views handed out (bytes()) stay valid as long as the MappedFile lives.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "staticlm/core/result.h"

namespace staticlm {

class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Maps `path` read-only. Fails with NotFound when the file does not exist, InvalidArgument
  // when it is not a regular file, Unavailable when it cannot be opened or mapped.
  static Result<MappedFile> open(const std::string& path);

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  std::string path_;
};

// Tells the kernel this process is done with the whole pages inside `bytes`, a range of a
// read-only MappedFile: they leave the resident set and are read again from the file if touched.
// Streaming readers call it after each tensor so a pass over a large checkpoint stays small.
void release_mapped_pages(std::span<const uint8_t> bytes);

// Files read whole (configs, tokenizer files, templates, prompts) are at most this large unless
// the caller says otherwise: far more than any real one, far less than memory.
inline constexpr uint64_t kMaxTextFileBytes = uint64_t{1} << 30;

// Reads a whole file into a string: a regular file, or a pipe (/dev/stdin). Fails with NotFound
// when it does not exist, InvalidArgument (naming the path) for a directory or other non-file or
// one larger than `max_bytes`, Unavailable when it cannot be opened or read (permission, I/O).
Result<std::string> read_text_file(const std::string& path, uint64_t max_bytes = kMaxTextFileBytes);

}  // namespace staticlm
