// SPDX-License-Identifier: Apache-2.0
// A method serialized on its own: the delegate-blob form of a backend that runs an instruction
// list (the cpu backend). The bytes are one flatbuffer whose root is program.fbs's Method
// (identifier "SLMM"), so a partition is encoded, verified and read exactly like a program's
// method; only its scope differs: a blob has no constants (its constant data is named data,
// shared through the program) and calls no delegate.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/format/program_generated.h"
#include "staticlm/format/program_spec.h"

namespace staticlm {

inline constexpr const char* kMethodBlobIdentifier = "SLMM";

// Serializes `method`. Fails with InvalidArgument, naming the value or instruction, for a method
// the reader would refuse (a constant value or a delegate call among them).
Result<std::vector<uint8_t>> write_method_blob(const MethodSpec& method);

// Verifies untrusted `bytes` (flatbuffers verifier, then the method rules of docs/format.md
// minus constants and delegate calls) and returns the method, which borrows `bytes`. Fails with
// DataLoss for bytes that are not a method blob and InvalidArgument naming what is inconsistent.
Result<const fb::Method*> read_method_blob(std::span<const uint8_t> bytes);

}  // namespace staticlm
