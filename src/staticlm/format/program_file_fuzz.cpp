// SPDX-License-Identifier: Apache-2.0
// libFuzzer: program file bytes. The verifying reader must refuse anything malformed with a
// Status; what it accepts must be safe to walk: metadata, embedded files, named data and every
// method's instructions.
#include <cstddef>
#include <cstdint>

#include "staticlm/format/metadata.h"
#include "staticlm/format/method_reader.h"
#include "staticlm/format/program_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace staticlm;
  auto file = ProgramFile::from_bytes(std::span<const uint8_t>(data, size), "fuzz.slm");
  if (!file.ok()) {
    return 0;
  }
  const fb::Program& program = (*file)->program();
  if (program.metadata() != nullptr) {
    for (const fb::MetadataEntry* entry : *program.metadata()) {
      (void)metadata_value(*entry);
    }
  }
  if (program.files() != nullptr) {
    for (const fb::EmbeddedFile* embedded : *program.files()) {
      (void)(*file)->embedded_file(embedded->name()->string_view());
    }
  }
  if (program.methods() != nullptr) {
    for (const fb::Method* method : *program.methods()) {
      (void)read_method_spec(*method);
    }
  }
  return 0;
}
