// SPDX-License-Identifier: Apache-2.0
#include "staticlm/format/method_blob.h"

#include <cstring>

#include "staticlm/format/method_builder.h"
#include "staticlm/format/program_verifier.h"

namespace staticlm {
namespace {

// As for program files: deep enough for any method, small enough to bound a hostile blob.
constexpr unsigned kMaxBlobDepth = 64;
constexpr unsigned kMaxBlobTables = 10'000'000;

}  // namespace

Result<std::vector<uint8_t>> write_method_blob(const MethodSpec& method) {
  flatbuffers::FlatBufferBuilder builder(16 * 1024);
  // Zeros must be stored too: a reader must see storage = Arena, index = 0 explicitly.
  builder.ForceDefaults(true);
  builder.Finish(build_method(builder, method), kMethodBlobIdentifier);
  std::vector<uint8_t> bytes(builder.GetBufferPointer(), builder.GetBufferPointer() + builder.GetSize());
  // The reader's own rules, before anyone stores the bytes.
  STATICLM_RETURN_IF_ERROR(read_method_blob(bytes).status());
  return bytes;
}

Result<const fb::Method*> read_method_blob(std::span<const uint8_t> bytes) {
  if (bytes.size() < sizeof(flatbuffers::uoffset_t) + flatbuffers::kFileIdentifierLength ||
      !flatbuffers::BufferHasIdentifier(bytes.data(), kMethodBlobIdentifier)) {
    return data_loss("not a method blob (", bytes.size(), " bytes without the '", kMethodBlobIdentifier,
                     "' identifier)");
  }
  // The flatbuffer is read in place; its 8-byte fields are only aligned if the bytes are.
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(uint64_t) != 0) {
    return invalid_argument("method blob bytes must start at an 8-byte aligned address");
  }
  flatbuffers::Verifier verifier(bytes.data(), bytes.size(), kMaxBlobDepth, kMaxBlobTables);
  if (!verifier.VerifyBuffer<fb::Method>(kMethodBlobIdentifier)) {
    return data_loss("corrupt method blob: the flatbuffers verifier refused its ", bytes.size(), " bytes");
  }
  const fb::Method* method = flatbuffers::GetRoot<fb::Method>(bytes.data());
  STATICLM_RETURN_IF_ERROR(verify_method_blob_semantics(*method));
  return method;
}

}  // namespace staticlm
