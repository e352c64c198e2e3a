// SPDX-License-Identifier: Apache-2.0
// Serializes a MethodSpec into a flatbuffer under construction: shared by the program writer
// (a method of the program) and the method-blob writer (a method as a delegate blob), so a
// method has one encoding. Internal to the format library.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include "staticlm/format/program_generated.h"
#include "staticlm/format/program_spec.h"

namespace staticlm {

flatbuffers::Offset<fb::Method> build_method(flatbuffers::FlatBufferBuilder& builder, const MethodSpec& method);

}  // namespace staticlm
