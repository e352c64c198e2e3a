// SPDX-License-Identifier: Apache-2.0
// Typed access to the values a program file stores in flatbuffer form: the program's metadata
// entries and kernel calls' attributes. Everything here reads a ProgramFile that open() has
// verified, so keys are unique and types are known.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/format/program_file.h"
#include "staticlm/format/program_spec.h"
#include "staticlm/ops/attributes.h"

namespace staticlm {

// The metadata value stored under `key`. Fail with NotFound "metadata key 'x' is missing" or
// InvalidArgument "metadata 'x': expected int, found string". metadata_float also accepts an
// int entry (as attributes do); the other getters want exactly their type.
Result<int64_t> metadata_int(const ProgramFile& file, std::string_view key);
Result<double> metadata_float(const ProgramFile& file, std::string_view key);
Result<std::string> metadata_string(const ProgramFile& file, std::string_view key);
Result<bool> metadata_bool(const ProgramFile& file, std::string_view key);
Result<std::vector<int64_t>> metadata_int_list(const ProgramFile& file, std::string_view key);

// "int", "float", "string", "bool", "int list" (or "unknown" for a code outside the enum).
std::string_view metadata_type_name(fb::MetadataType type);

// The entry's value as the writer's MetadataValue. Fails with InvalidArgument for an unknown type
// (only possible for an entry that did not come from a verified file).
Result<MetadataValue> metadata_value(const fb::MetadataEntry& entry);

// The value for printing: 42, 0.5, hello, true, [1,2,3]. Floats print in the shortest form that
// reads back to the same double.
std::string metadata_value_string(const fb::MetadataEntry& entry);

// A kernel call's attributes (nullptr = none). Fails with InvalidArgument naming the attribute
// when its type is unknown or its name repeats (neither happens in a verified file).
Result<Attributes> attributes_from_fb(const flatbuffers::Vector<flatbuffers::Offset<fb::Attribute>>* attributes);

}  // namespace staticlm
