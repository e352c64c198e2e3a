// SPDX-License-Identifier: Apache-2.0
// ProgramSpec: the plain description of a program that ProgramWriter serializes. Exporters
// (graph lowering, the hf_static builder) fill it; nothing here knows about flatbuffers.
// Constant and file contents come from ByteSource objects that the writer reads one at a
// time while streaming the file, so an export never holds the whole model in memory.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "staticlm/core/byte_source.h"
#include "staticlm/core/result.h"
#include "staticlm/core/tensor.h"
#include "staticlm/ops/attributes.h"

namespace staticlm {

using MetadataValue = std::variant<int64_t, double, std::string, bool, std::vector<int64_t>>;

struct MetadataSpec {
  std::string key;
  MetadataValue value;
};

struct ConstantSpec {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  std::shared_ptr<ByteSource> source;
};

enum class ValueStorage : uint8_t { kArena = 0, kInput = 1, kOutput = 2, kConstant = 3, kNamedData = 4 };

struct ValueSpec {
  DType dtype = DType::kF32;
  Shape shape;
  ValueStorage storage = ValueStorage::kArena;
  uint64_t index = 0;  // arena byte offset, input / output position, or constant index
  std::string key;     // kNamedData: the named data entry holding the bytes
};

struct IoSpec {
  std::string name;
  uint32_t value = 0;
  bool is_mutable = false;
};

inline constexpr int32_t kAbsentValue = -1;

struct KernelCallSpec {
  std::string op;
  std::vector<int32_t> inputs;  // kAbsentValue for an absent optional input
  std::vector<uint32_t> outputs;
  Attributes attributes;
};

struct DelegateCallSpec {
  uint32_t delegate = 0;
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
};

using InstructionSpec = std::variant<KernelCallSpec, DelegateCallSpec>;

struct MethodSpec {
  std::string name;
  std::vector<IoSpec> inputs;
  std::vector<IoSpec> outputs;
  std::vector<ValueSpec> values;
  std::vector<InstructionSpec> instructions;
  uint64_t arena_size = 0;
  uint32_t arena_alignment = 64;
};

struct CompileSpecEntry {
  std::string key;
  std::vector<uint8_t> value;
};

struct DelegateSpec {
  std::string backend_id;
  std::vector<CompileSpecEntry> compile_specs;
  std::shared_ptr<ByteSource> blob;
  std::vector<uint32_t> output_order;  // empty = identity
};

// Bytes stored once per program under `key` (unique among the program's named data), each in a
// segment of its own: what delegates share between methods (packed weights), and what
// kNamedData values read.
struct NamedDataSpec {
  std::string key;
  std::shared_ptr<ByteSource> source;
  uint32_t alignment = 64;  // at least 64; entries of 16 KiB or more are page-aligned anyway
};

struct EmbeddedFileSpec {
  std::string name;
  std::shared_ptr<ByteSource> contents;
};

struct ProgramSpec {
  std::vector<MetadataSpec> metadata;
  std::vector<ConstantSpec> constants;
  std::vector<MethodSpec> methods;
  std::vector<DelegateSpec> delegates;
  std::vector<EmbeddedFileSpec> files;
  std::vector<NamedDataSpec> named_data;
};

}  // namespace staticlm
