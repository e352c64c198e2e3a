// SPDX-License-Identifier: Apache-2.0
// libFuzzer: a safetensors file's bytes. The header parser must refuse anything malformed
// (lengths, offsets that overlap or wrap, dtypes, shapes) with a Status, and every tensor it
// accepts must lie inside the file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "staticlm/exporter/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  auto tensors = staticlm::parse_safetensors(bytes, "fuzz.safetensors");
  if (!tensors.ok()) {
    return 0;
  }
  for (const staticlm::SafetensorsTensor& tensor : *tensors) {
    // The accepted view must be inside the input: reading it is what an export does.
    if (!tensor.bytes.empty() && (tensor.bytes.data() < data || tensor.bytes.data() + tensor.bytes.size() > data + size)) {
      std::abort();
    }
  }
  return 0;
}
