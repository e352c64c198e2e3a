// SPDX-License-Identifier: Apache-2.0
// ProgramFile treats its bytes as untrusted: each class of corruption is refused with a message
// naming what is wrong, and random damage to the flatbuffer never crashes the reader.
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/format/metadata.h"
#include "staticlm/format/program_file.h"
#include "staticlm/format/program_test_util.h"
#include "staticlm/format/program_writer.h"

namespace staticlm {
namespace {

using ::testing::IsSubstring;
using testing_util::read_file_bytes;
using testing_util::sample_spec;
using testing_util::ScratchDir;

constexpr uint64_t kHuge = std::numeric_limits<uint64_t>::max() - 63;  // a multiple of 64

// The bytes of the sample program as write_program produces them.
std::vector<uint8_t> sample_file_bytes() {
  ScratchDir dir;
  const std::string path = dir.path("sample.slm");
  Result<WriteSummary> summary = write_program(sample_spec(), path);
  EXPECT_TRUE(summary.ok()) << summary.status().to_string();
  return read_file_bytes(path);
}

FileHeader header_of(const std::vector<uint8_t>& bytes) {
  FileHeader header{};
  std::memcpy(&header, bytes.data(), sizeof(header));
  return header;
}

void set_header(std::vector<uint8_t>& bytes, const FileHeader& header) {
  std::memcpy(bytes.data(), &header, sizeof(header));
}

Status open_status(const std::vector<uint8_t>& bytes) {
  Result<std::unique_ptr<ProgramFile>> file = ProgramFile::from_bytes(bytes, "test.slm");
  return file.ok() ? ok_status() : file.status();
}

void expect_refused(const std::vector<uint8_t>& bytes, StatusCode code, const std::string& expected) {
  Status status = open_status(bytes);
  ASSERT_FALSE(status.ok()) << "expected a failure mentioning: " << expected;
  EXPECT_EQ(status.code(), code) << status.to_string();
  EXPECT_PRED_FORMAT2(IsSubstring, expected, status.message());
  EXPECT_PRED_FORMAT2(IsSubstring, "'test.slm'", status.message());
}

// A tiny program built field by field, bypassing the writer's validation, so a test can set
// one field to a bad value. The defaults describe a valid program.
struct RawProgram {
  struct Segment {
    uint64_t offset, size;
    uint32_t alignment;
  };
  struct Constant {
    std::string name;
    uint8_t dtype;
    Shape shape;
    uint32_t segment;
    uint64_t offset, size;
  };
  struct Value {
    uint8_t dtype;
    Shape shape;
    fb::StorageKind storage;
    uint64_t index;
  };
  std::vector<Segment> segments = {{0, 128, 64}};
  std::vector<Constant> constants = {{"w", 0, {4, 4}, 0, 0, 64}, {"b", 0, {4}, 0, 64, 16}};
  std::vector<std::string> metadata_keys = {"architecture"};
  std::string method_name = "decode";
  std::string second_method_name;  // empty = only one method
  std::vector<Value> values = {
      {6, {1}, fb::StorageKind::Input, 0},
      {0, {4, 4}, fb::StorageKind::Arena, 0},
      {0, {4, 4}, fb::StorageKind::Constant, 0},
      {0, {4, 4}, fb::StorageKind::Output, 0},
  };
  uint32_t input_value = 0;
  uint32_t output_value = 3;
  std::string op = "linear";
  std::vector<int32_t> kernel_inputs = {1, 2, -1};
  std::vector<uint32_t> kernel_outputs = {3};
  uint8_t instruction_type = static_cast<uint8_t>(fb::Instruction::KernelCall);
  uint32_t delegate_index = 0;
  std::vector<uint32_t> delegate_outputs = {3};
  std::vector<uint32_t> output_order = {0};
  uint64_t arena_size = 64;
  uint64_t data_size = 128;
};

std::vector<uint8_t> raw_file(const RawProgram& raw) {
  flatbuffers::FlatBufferBuilder builder;
  builder.ForceDefaults(true);
  std::vector<flatbuffers::Offset<fb::MetadataEntry>> metadata;
  for (const std::string& key : raw.metadata_keys) {
    metadata.push_back(fb::CreateMetadataEntry(builder, builder.CreateString(key), fb::MetadataType::String, 0, 0.0,
                                               builder.CreateString("llama")));
  }
  std::vector<flatbuffers::Offset<fb::Segment>> segments;
  for (const auto& s : raw.segments) {
    segments.push_back(fb::CreateSegment(builder, s.offset, s.size, s.alignment));
  }
  std::vector<flatbuffers::Offset<fb::Constant>> constants;
  for (const auto& c : raw.constants) {
    constants.push_back(fb::CreateConstant(builder, builder.CreateString(c.name), c.dtype,
                                           builder.CreateVector(c.shape), c.segment, c.offset, c.size));
  }
  std::vector<flatbuffers::Offset<fb::Value>> values;
  for (const auto& v : raw.values) {
    values.push_back(fb::CreateValue(builder, v.dtype, builder.CreateVector(v.shape), v.storage, v.index));
  }
  auto kernel = fb::CreateKernelCall(builder, builder.CreateString(raw.op), builder.CreateVector(raw.kernel_inputs),
                                     builder.CreateVector(raw.kernel_outputs));
  auto delegate_call =
      fb::CreateDelegateCall(builder, raw.delegate_index, builder.CreateVector(std::vector<uint32_t>{1}),
                             builder.CreateVector(raw.delegate_outputs));
  const auto type = static_cast<fb::Instruction>(raw.instruction_type);
  auto body = type == fb::Instruction::DelegateCall ? delegate_call.Union() : kernel.Union();
  std::vector<flatbuffers::Offset<fb::InstructionEntry>> instructions = {
      fb::CreateInstructionEntry(builder, type, body)};
  auto make_method = [&](const std::string& name) {
    auto inputs =
        builder.CreateVector(std::vector{fb::CreateIoTensor(builder, builder.CreateString("tokens"), raw.input_value)});
    auto outputs = builder.CreateVector(
        std::vector{fb::CreateIoTensor(builder, builder.CreateString("logits"), raw.output_value)});
    return fb::CreateMethod(builder, builder.CreateString(name), inputs, outputs, builder.CreateVector(values),
                            builder.CreateVector(instructions), fb::CreateMemoryPlan(builder, raw.arena_size, 64));
  };
  std::vector<flatbuffers::Offset<fb::Method>> methods = {make_method(raw.method_name)};
  if (!raw.second_method_name.empty()) {
    methods.push_back(make_method(raw.second_method_name));
  }
  std::vector<flatbuffers::Offset<fb::Delegate>> delegates = {
      fb::CreateDelegate(builder, builder.CreateString("test_npu"), 0, 0, builder.CreateVector(raw.output_order))};
  auto root = fb::CreateProgram(builder, builder.CreateVector(metadata), builder.CreateVector(segments),
                                builder.CreateVector(constants), builder.CreateVector(methods),
                                builder.CreateVector(delegates));
  builder.Finish(root, fb::ProgramIdentifier());

  FileHeader header{};
  std::memcpy(header.magic, kProgramMagic, 4);
  header.major_version = kFormatMajorVersion;
  header.minor_version = kFormatMinorVersion;
  header.header_size = kFileHeaderSize;
  header.flatbuffer_offset = kFileHeaderSize;
  header.flatbuffer_size = builder.GetSize();
  header.data_offset = (kFileHeaderSize + builder.GetSize() + kPageAlignment - 1) / kPageAlignment * kPageAlignment;
  // A file holding a huge data area cannot exist in a test; cap what is materialized.
  header.data_size = raw.data_size;
  std::vector<uint8_t> bytes(header.data_offset + std::min<uint64_t>(raw.data_size, 1 << 20), 0);
  set_header(bytes, header);
  std::memcpy(bytes.data() + kFileHeaderSize, builder.GetBufferPointer(), builder.GetSize());
  return bytes;
}

// A fresh RawProgram with `edit` applied must be refused with InvalidArgument naming `expected`.
void expect_edit_refused(const std::function<void(RawProgram&)>& edit, const std::string& expected) {
  RawProgram raw;
  edit(raw);
  expect_refused(raw_file(raw), StatusCode::kInvalidArgument, expected);
}

TEST(ProgramCorruptionTest, BaselinesOpen) {
  EXPECT_TRUE(open_status(sample_file_bytes()).ok()) << open_status(sample_file_bytes()).to_string();
  EXPECT_TRUE(open_status(raw_file(RawProgram{})).ok()) << open_status(raw_file(RawProgram{})).to_string();
  RawProgram with_delegate;
  with_delegate.instruction_type = static_cast<uint8_t>(fb::Instruction::DelegateCall);
  EXPECT_TRUE(open_status(raw_file(with_delegate)).ok()) << open_status(raw_file(with_delegate)).to_string();
}

TEST(ProgramCorruptionTest, MissingFileIsNotFound) {
  ScratchDir dir;
  Result<std::unique_ptr<ProgramFile>> file = ProgramFile::open(dir.path("nope.slm"));
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kNotFound);
}

TEST(ProgramCorruptionTest, TruncatedFiles) {
  const std::vector<uint8_t> bytes = sample_file_bytes();
  const FileHeader header = header_of(bytes);
  ASSERT_GT(header.data_size, 0u);
  auto truncated = [&](uint64_t size) {
    return std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(size));
  };
  expect_refused(truncated(0), StatusCode::kDataLoss, "truncated: file is 0 bytes, the header needs 48");
  expect_refused(truncated(47), StatusCode::kDataLoss, "truncated: file is 47 bytes, the header needs 48");
  expect_refused(truncated(48), StatusCode::kDataLoss, "truncated: the flatbuffer (offset 48, ");
  expect_refused(truncated(48 + header.flatbuffer_size / 2), StatusCode::kDataLoss, "truncated: the flatbuffer");
  expect_refused(truncated(header.data_offset - 1), StatusCode::kDataLoss, "truncated: the data area");
  expect_refused(truncated(header.data_offset + header.data_size / 2), StatusCode::kDataLoss,
                 "truncated: the data area");
  expect_refused(truncated(bytes.size() - 1), StatusCode::kDataLoss,
                 "ends past the end of the " + std::to_string(bytes.size() - 1) + "-byte file");

  // The same through open(), which names the path.
  ScratchDir dir;
  const std::string path = dir.path("short.slm");
  FILE* out = std::fopen(path.c_str(), "wb");
  ASSERT_NE(out, nullptr);
  std::fwrite(bytes.data(), 1, 20, out);
  std::fclose(out);
  Result<std::unique_ptr<ProgramFile>> file = ProgramFile::open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_PRED_FORMAT2(IsSubstring, "'" + path + "': truncated: file is 20 bytes", file.status().message());
}

TEST(ProgramCorruptionTest, BadMagic) {
  std::vector<uint8_t> bytes = sample_file_bytes();
  bytes[0] = 'G';
  bytes[1] = 'G';
  bytes[2] = 'U';
  bytes[3] = 0;
  expect_refused(bytes, StatusCode::kDataLoss, "not a staticlm program: bad magic 'GGU\\x00'");
}

TEST(ProgramCorruptionTest, FormatVersions) {
  std::vector<uint8_t> bytes = sample_file_bytes();
  FileHeader header = header_of(bytes);
  header.major_version = 2;
  header.minor_version = 0;
  set_header(bytes, header);
  expect_refused(bytes, StatusCode::kUnimplemented,
                 "format version 2.0 is newer than this reader (1.x); upgrade staticlm");

  header.major_version = 0;
  header.minor_version = 3;
  set_header(bytes, header);
  expect_refused(bytes, StatusCode::kUnimplemented, "format version 0.3 is older than this reader supports (1.x)");

  // Minor versions of the same major are readable either way.
  header.major_version = kFormatMajorVersion;
  header.minor_version = 7;
  set_header(bytes, header);
  EXPECT_TRUE(open_status(bytes).ok()) << open_status(bytes).to_string();
}

TEST(ProgramCorruptionTest, BadHeaderFields) {
  const std::vector<uint8_t> original = sample_file_bytes();
  const FileHeader good = header_of(original);
  auto with = [&](auto patch) {
    std::vector<uint8_t> bytes = original;
    FileHeader header = good;
    patch(header);
    set_header(bytes, header);
    return bytes;
  };
  expect_refused(with([](FileHeader& h) { h.header_size = 40; }), StatusCode::kDataLoss,
                 "header_size 40 is smaller than the 48-byte header");
  // A larger header (a future minor version's fields) is skipped, but must not overlap.
  expect_refused(with([](FileHeader& h) { h.header_size = 64; }), StatusCode::kDataLoss,
                 "flatbuffer offset 48 overlaps the 64-byte header");
  expect_refused(with([](FileHeader& h) { h.flatbuffer_offset = 52; }), StatusCode::kDataLoss,
                 "flatbuffer offset 52 is not 8-byte aligned");
  expect_refused(with([](FileHeader& h) { h.flatbuffer_size = kHuge; }), StatusCode::kDataLoss,
                 "truncated: the flatbuffer");
  expect_refused(with([](FileHeader& h) { h.flatbuffer_size = 4; }), StatusCode::kDataLoss,
                 "corrupt program flatbuffer: 4 bytes is too small");
  expect_refused(with([&](FileHeader& h) { h.data_offset = good.data_offset + 64; }), StatusCode::kDataLoss,
                 "is not page (4096-byte) aligned");
  expect_refused(with([](FileHeader& h) { h.data_offset = 0; }), StatusCode::kDataLoss,
                 "data area offset 0 overlaps the flatbuffer");
  expect_refused(with([](FileHeader& h) { h.data_size = kHuge; }), StatusCode::kDataLoss, "truncated: the data area");
  expect_refused(with([](FileHeader& h) { h.data_offset = std::numeric_limits<uint64_t>::max() - 4095; }),
                 StatusCode::kDataLoss, "truncated: the data area");
}

TEST(ProgramCorruptionTest, CorruptFlatbufferStructure) {
  std::vector<uint8_t> bytes = sample_file_bytes();
  std::vector<uint8_t> bad_identifier = bytes;
  std::memcpy(bad_identifier.data() + 48 + 4, "XXXX", 4);
  expect_refused(bad_identifier, StatusCode::kDataLoss, "identifier is 'XXXX', expected 'SLMP'");
  // A root offset pointing past the buffer.
  std::vector<uint8_t> bad_root = bytes;
  const uint32_t root = 0x7ffffff0;
  std::memcpy(bad_root.data() + 48, &root, 4);
  expect_refused(bad_root, StatusCode::kDataLoss, "corrupt program flatbuffer");
}

TEST(ProgramCorruptionTest, SegmentOutOfRange) {
  RawProgram raw;
  raw.segments[0].size = 4096;  // the data area holds 128 bytes
  expect_refused(raw_file(raw), StatusCode::kInvalidArgument,
                 "segment 0 (offset 0, 4096 bytes) is out of range: the data area holds 128 bytes");
  raw = RawProgram{};
  raw.segments.push_back({4096, 0, 64});  // an empty segment still has to start inside
  expect_refused(raw_file(raw), StatusCode::kInvalidArgument, "segment 1 (offset 4096, 0 bytes) is out of range");
  expect_edit_refused([](RawProgram& edited) { edited.segments[0].alignment = 48; },
                      "segment 0: alignment 48 is not a power of two");
  expect_edit_refused(
      [](RawProgram& edited) {
        edited.segments.push_back({32, 0, 64});
      },
      "segment 1: offset 32 is not a multiple of its alignment 64");
}

TEST(ProgramCorruptionTest, SizeOverflowIsOutOfRangeNotACrash) {
  RawProgram raw;
  raw.segments[0].offset = kHuge;  // offset + size wraps around 2^64
  expect_refused(raw_file(raw), StatusCode::kInvalidArgument, "segment 0 (offset " + std::to_string(kHuge));
  expect_edit_refused([](RawProgram& edited) { edited.constants[1].offset = kHuge; },
                      "constant 'b': offset " + std::to_string(kHuge) + " + size 16 is out of range of segment 0");
  expect_edit_refused([](RawProgram& edited) { edited.values[1].index = kHuge; },
                      "method 'decode' value 1: arena offset " + std::to_string(kHuge) + " + 64 bytes is out of range");
  expect_edit_refused(
      [](RawProgram& edited) {
        edited.constants[0].shape = {int64_t{1} << 40, int64_t{1} << 40};
      },
      "constant 'w': shape [1099511627776,1099511627776]");
}

TEST(ProgramCorruptionTest, ConstantSizeMustMatchDTypeTimesShape) {
  RawProgram raw;
  raw.segments[0].size = 8192;
  raw.data_size = 8192;
  raw.constants[0] = {"lm_head.weight", static_cast<uint8_t>(DType::kF16), {64, 64}, 0, 0, 4096};
  expect_refused(raw_file(raw), StatusCode::kInvalidArgument,
                 "constant 'lm_head.weight': size 4096 != f16[64,64] = 8192 bytes");
  expect_edit_refused([](RawProgram& edited) { edited.constants[0].dtype = 99; },
                      "constant 'w': unknown dtype code 99");
  expect_edit_refused(
      [](RawProgram& edited) {
        edited.constants[0].shape = {4, -4};
      },
      "constant 'w': shape [4,-4] has a negative dimension");
  expect_edit_refused([](RawProgram& edited) { edited.constants[1].segment = 3; },
                      "constant 'b': segment 3 does not exist (the program has 1 segments)");
  expect_edit_refused([](RawProgram& edited) { edited.constants[1].offset = 72; },
                      "constant 'b': data at data-area offset 72 is not 64-byte aligned");
}

TEST(ProgramCorruptionTest, DanglingValueIndex) {
  RawProgram raw;
  raw.input_value = 40;
  expect_refused(raw_file(raw), StatusCode::kInvalidArgument,
                 "method 'decode' input 'tokens' refers to value 40, the method has 4 values");
  expect_edit_refused([](RawProgram& edited) { edited.output_value = 1; },
                      "method 'decode' output 'logits': value 1 is not stored as Output 0");
  expect_edit_refused([](RawProgram& edited) { edited.values[2].index = 5; },
                      "method 'decode' value 2: constant index 5 is out of range (the program has 2 constants)");
  expect_edit_refused([](RawProgram& edited) { edited.values[2].shape = {4}; },
                      "method 'decode' value 2 is f32[4] but constant 'w' is f32[4,4]");
  expect_edit_refused(
      [](RawProgram& edited) {
        edited.values.push_back({0, {4}, fb::StorageKind::Input, 3});
      },
      "method 'decode' value 4: input index 3 is out of range (the method has 1 inputs)");
  expect_edit_refused(
      [](RawProgram& edited) {
        edited.values.push_back({0, {4}, fb::StorageKind::Output, 0});
      },
      "method 'decode' value 4: output 0 does not refer back to this value");
  expect_edit_refused([](RawProgram& edited) { edited.values[1].storage = static_cast<fb::StorageKind>(9); },
                      "method 'decode' value 1: unknown storage kind 9");
  expect_edit_refused([](RawProgram& edited) { edited.values[1].dtype = 200; },
                      "method 'decode' value 1: unknown dtype code 200");
}

TEST(ProgramCorruptionTest, BadInstructionOperand) {
  RawProgram raw;
  raw.kernel_inputs[1] = 999;
  expect_refused(raw_file(raw), StatusCode::kInvalidArgument,
                 "method 'decode' instruction 0 (linear): input 1 refers to value 999, the method has 4 values");
  expect_edit_refused([](RawProgram& edited) { edited.kernel_inputs[0] = -2; }, "input 0 refers to value -2");
  expect_edit_refused([](RawProgram& edited) { edited.kernel_outputs = {4}; },
                      "method 'decode' instruction 0 (linear): output 0 refers to value 4, the method has 4 values");
  expect_edit_refused([](RawProgram& edited) { edited.op = ""; }, "method 'decode' instruction 0: op name is empty");
  expect_edit_refused([](RawProgram& edited) { edited.instruction_type = 7; },
                      "method 'decode' instruction 0: unknown instruction type 7");

  raw = RawProgram{};
  raw.instruction_type = static_cast<uint8_t>(fb::Instruction::DelegateCall);
  raw.delegate_index = 2;
  expect_refused(raw_file(raw), StatusCode::kInvalidArgument,
                 "method 'decode' instruction 0 (delegate 2): delegate 2 does not exist (the program has 1 delegates)");
  raw.delegate_index = 0;
  raw.delegate_outputs = {3, 1};
  expect_refused(raw_file(raw), StatusCode::kInvalidArgument,
                 "the delegate's output_order has 1 entries, the call has 2 outputs");
  raw.delegate_outputs = {9};
  expect_refused(raw_file(raw), StatusCode::kInvalidArgument, "(delegate 0): output 0 refers to value 9");
  raw.delegate_outputs = {3};
  raw.output_order = {1};
  expect_refused(raw_file(raw), StatusCode::kInvalidArgument,
                 "delegate 0: output_order is not a permutation of [0, 1) (entry 0 is 1)");
}

TEST(ProgramCorruptionTest, DuplicateAndEmptyNames) {
  RawProgram raw;
  raw.constants[1].name = "w";
  expect_refused(raw_file(raw), StatusCode::kInvalidArgument, "duplicate constant name 'w'");
  expect_edit_refused([](RawProgram& edited) { edited.constants[0].name = ""; }, "constant 0: constant name is empty");
  expect_edit_refused([](RawProgram& edited) { edited.second_method_name = "decode"; },
                      "duplicate method name 'decode'");
  expect_edit_refused(
      [](RawProgram& edited) {
        edited.metadata_keys = {"architecture", "architecture"};
      },
      "duplicate metadata key 'architecture'");
}

// Reads everything a verified file hands out, so a sanitizer sees any bad access.
uint64_t touch_everything(const ProgramFile& file) {
  uint64_t checksum = 0;
  const fb::Program& program = file.program();
  for (uint32_t s = 0; s < (program.segments() ? program.segments()->size() : 0); ++s) {
    for (uint8_t byte : file.segment(s)) {
      checksum += byte;
    }
  }
  for (uint32_t c = 0; c < (program.constants() ? program.constants()->size() : 0); ++c) {
    std::span<const uint8_t> bytes = file.constant_bytes(c);
    checksum += bytes.empty() ? 0 : bytes.front() + bytes.back();
  }
  if (program.metadata() != nullptr) {
    for (const fb::MetadataEntry* entry : *program.metadata()) {
      checksum += metadata_value_string(*entry).size();
    }
  }
  if (program.methods() != nullptr) {
    for (const fb::Method* method : *program.methods()) {
      if (method->instructions() == nullptr) {
        continue;
      }
      for (const fb::InstructionEntry* entry : *method->instructions()) {
        if (const fb::KernelCall* call = entry->instruction_as_KernelCall()) {
          Result<Attributes> attributes = attributes_from_fb(call->attributes());
          checksum += attributes.ok() ? attributes->entries().size() : 0;
        }
      }
    }
  }
  return checksum;
}

TEST(ProgramCorruptionTest, RandomFlatbufferByteFlipsNeverCrash) {
  std::vector<uint8_t> bytes = sample_file_bytes();
  const FileHeader header = header_of(bytes);
  std::mt19937 random(20240611);
  std::uniform_int_distribution<uint64_t> position(header.flatbuffer_offset,
                                                   header.flatbuffer_offset + header.flatbuffer_size - 1);
  std::uniform_int_distribution<int> flips_per_try(1, 4);
  std::uniform_int_distribution<int> new_byte(0, 255);
  int opened = 0;
  int refused = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<std::pair<uint64_t, uint8_t>> saved;
    for (int f = flips_per_try(random); f > 0; --f) {
      const uint64_t at = position(random);
      saved.emplace_back(at, bytes[at]);
      bytes[at] = static_cast<uint8_t>(new_byte(random));
    }
    Result<std::unique_ptr<ProgramFile>> file = ProgramFile::from_bytes(bytes, "flipped.slm");
    if (file.ok()) {
      ++opened;
      touch_everything(**file);
    } else {
      ++refused;
      EXPECT_FALSE(file.status().message().empty());
    }
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
      bytes[it->first] = it->second;
    }
  }
  EXPECT_EQ(opened + refused, 2000);
  EXPECT_GT(refused, 0);
  EXPECT_TRUE(open_status(bytes).ok());  // restored exactly
}

TEST(ProgramCorruptionTest, MisalignedCallerBytesAreRefused) {
  std::vector<uint8_t> bytes = sample_file_bytes();
  std::vector<uint8_t> shifted(bytes.size() + 1);
  std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
  Result<std::unique_ptr<ProgramFile>> file =
      ProgramFile::from_bytes(std::span<const uint8_t>(shifted).subspan(1), "shifted");
  ASSERT_FALSE(file.ok());
  EXPECT_PRED_FORMAT2(IsSubstring, "8-byte aligned address", file.status().message());
}

}  // namespace
}  // namespace staticlm
