// SPDX-License-Identifier: Apache-2.0
// The semantic half of program verification, shared by the reader (ProgramFile::verify) and the
// writer (which checks the flatbuffer it has just built before writing any byte), so the two
// can never disagree about what a valid program is. Internal to the format library.
#pragma once

#include <cstdint>

#include "staticlm/core/status.h"
#include "staticlm/format/program_generated.h"

namespace staticlm {

// Checks every index, range, size, name and enum in `program` against itself and against a
// data area of `data_size` bytes: segments inside the data area and aligned; constants sized
// dtype x shape, inside their segment and 64-byte aligned; methods' values, io tensors and
// instruction operands in range; delegates and embedded files referring to real segments;
// names non-empty and unique. Precondition: `program` passed flatbuffers::Verifier (so every
// table and vector is readable). Fails with InvalidArgument naming the first bad entry.
Status verify_program_semantics(const fb::Program& program, uint64_t data_size);

// The same checks for a method serialized on its own (a method blob): a blob has no constants
// and calls no delegate; its NamedData values need a key, checked against the data its
// delegate is given at run time.
Status verify_method_blob_semantics(const fb::Method& method);

}  // namespace staticlm
