// SPDX-License-Identifier: Apache-2.0
// ProgramFile: a program file mapped read-only and verified. Opening treats the bytes as
// untrusted: the header, the flatbuffer (flatbuffers::Verifier) and then every segment, offset,
// size, dtype x shape, value index and instruction operand are checked, with checked
// arithmetic, before anything is handed out. After open() succeeds, every index and range in
// the flatbuffer is known to be in bounds, so accessors need no further checks.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "staticlm/core/mapped_file.h"
#include "staticlm/core/result.h"
#include "staticlm/format/file_header.h"
#include "staticlm/format/program_generated.h"

namespace staticlm {

class ProgramFile {
 public:
  // Maps and verifies `path`. Errors (DataLoss for truncation / corruption, InvalidArgument
  // for an inconsistent program, Unimplemented for a newer major format version) name what is
  // wrong and where, e.g. "constant 'lm_head.weight': size 4096 != f16[64,64] = 8192 bytes".
  static Result<std::unique_ptr<ProgramFile>> open(const std::string& path);
  // Verifies bytes the caller keeps alive for the ProgramFile's lifetime (tests, fuzzers).
  static Result<std::unique_ptr<ProgramFile>> from_bytes(std::span<const uint8_t> bytes,
                                                         std::string display_name = "<memory>");

  const FileHeader& header() const { return header_; }
  const fb::Program& program() const { return *program_; }
  const std::string& path() const { return name_; }
  uint64_t file_size() const { return bytes_.size(); }
  // The program's flatbuffer: graph, metadata and the data segments' checksums, not their bytes.
  std::span<const uint8_t> flatbuffer_bytes() const {
    return bytes_.subspan(header_.flatbuffer_offset, header_.flatbuffer_size);
  }

  // Bytes of segment `index` (validated at open).
  std::span<const uint8_t> segment(uint32_t index) const;
  // Bytes of constant `index`: a zero-copy view into the mapping.
  std::span<const uint8_t> constant_bytes(uint32_t index) const;
  // Contents of the embedded file called `name`, or nullopt.
  std::optional<std::span<const uint8_t>> embedded_file(std::string_view name) const;
  // Bytes of the named data entry `key` (a zero-copy view into the mapping), or nullopt.
  std::optional<std::span<const uint8_t>> named_data(std::string_view key) const;
  const fb::Method* find_method(std::string_view name) const;
  const fb::MetadataEntry* find_metadata(std::string_view key) const;

  // The checksum kind the writer recorded for every data segment ("xxh3-64", format 1.2), or
  // empty for a file written before checksums (it still loads; its bytes cannot be verified).
  std::string_view checksum_kind() const;
  // Reads every data segment and compares it with its recorded checksum (opening stays lazy:
  // only this reads the whole file). Fails with DataLoss naming the first segment that differs
  // and what it holds ("constant 'lm_head.weight' and 3 more"), FailedPrecondition for a file
  // without checksums, Unimplemented for a checksum kind this build does not know.
  Status verify_contents() const;
  // What segment `index` holds, for messages: "constant 'x'", "embedded file 'tokenizer.json'",
  // "named data 'k'", "delegate 0 (cpu) blob", with " and N more" when it holds several.
  std::string describe_segment(uint32_t index) const;

 private:
  ProgramFile() = default;
  Status verify();

  MappedFile mapping_;
  std::span<const uint8_t> bytes_;
  std::string name_;
  FileHeader header_{};
  const fb::Program* program_ = nullptr;
  std::unordered_map<std::string_view, uint32_t> named_data_segments_;  // key -> segment
};

}  // namespace staticlm
