// SPDX-License-Identifier: Apache-2.0
// A program written by write_program and opened by ProgramFile reads back byte for byte, with
// the documented alignment, and the writer refuses specs the reader would refuse.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "staticlm/format/metadata.h"
#include "staticlm/format/program_file.h"
#include "staticlm/format/program_test_util.h"
#include "staticlm/format/program_writer.h"
#include "staticlm/format/segment_checksum.h"

namespace staticlm {
namespace {

using ::testing::IsSubstring;
using testing_util::pattern_bytes;
using testing_util::read_file_bytes;
using testing_util::sample_spec;
using testing_util::ScratchDir;

std::vector<uint8_t> source_bytes(const ByteSource& source) {
  std::vector<uint8_t> bytes(source.size_bytes());
  EXPECT_TRUE(source.read(bytes).ok());
  return bytes;
}

std::vector<uint8_t> as_vector(std::span<const uint8_t> bytes) {
  return {bytes.begin(), bytes.end()};
}

template <typename T>
std::vector<T> as_vector(const flatbuffers::Vector<T>* vector) {
  return vector == nullptr ? std::vector<T>() : std::vector<T>(vector->begin(), vector->end());
}

class ProgramRoundTripTest : public ::testing::Test {
 protected:
  void SetUp() override {
    spec_ = sample_spec();
    path_ = dir_.path("sample.slm");
    WriteOptions options;
    options.on_progress = [this](const WriteProgress& progress) { progress_.push_back(progress); };
    Result<WriteSummary> summary = write_program(spec_, path_, options);
    ASSERT_TRUE(summary.ok()) << summary.status().to_string();
    summary_ = *summary;
    Result<std::unique_ptr<ProgramFile>> file = ProgramFile::open(path_);
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    file_ = std::move(file).value();
  }

  ScratchDir dir_;
  ProgramSpec spec_;
  std::string path_;
  WriteSummary summary_;
  std::vector<WriteProgress> progress_;
  std::unique_ptr<ProgramFile> file_;
};

TEST_F(ProgramRoundTripTest, HeaderAndSummaryDescribeTheFile) {
  const FileHeader& header = file_->header();
  EXPECT_EQ(std::string(header.magic, 4), "SLMP");
  EXPECT_EQ(header.major_version, kFormatMajorVersion);
  EXPECT_EQ(header.minor_version, kFormatMinorVersion);
  EXPECT_EQ(header.header_size, 48u);
  EXPECT_EQ(header.flatbuffer_offset, 48u);
  EXPECT_EQ(header.data_offset % 4096, 0u);
  EXPECT_GE(header.data_offset, header.flatbuffer_offset + header.flatbuffer_size);
  EXPECT_EQ(header.data_offset + header.data_size, file_->file_size());

  const uint64_t on_disk = std::filesystem::file_size(path_);
  EXPECT_EQ(file_->file_size(), on_disk);
  EXPECT_EQ(summary_.file_bytes, on_disk);
  uint64_t constant_bytes = 0;
  for (const ConstantSpec& constant : spec_.constants) {
    constant_bytes += constant.source->size_bytes();
  }
  EXPECT_EQ(summary_.constant_bytes, constant_bytes);
  EXPECT_EQ(summary_.largest_segment_bytes, 128u * 96 * 2);  // the bf16 embedding

  ASSERT_FALSE(progress_.empty());
  for (size_t i = 1; i < progress_.size(); ++i) {
    EXPECT_GE(progress_[i].bytes_written, progress_[i - 1].bytes_written);
  }
  EXPECT_EQ(progress_.back().bytes_total, on_disk);
  EXPECT_EQ(progress_.back().bytes_written, on_disk);
  // Only the program: the temporary file was renamed away.
  EXPECT_EQ(dir_.entries(), std::vector<std::string>{"sample.slm"});
}

TEST_F(ProgramRoundTripTest, MetadataRoundTripsWithTypes) {
  const auto* metadata = file_->program().metadata();
  ASSERT_NE(metadata, nullptr);
  ASSERT_EQ(metadata->size(), spec_.metadata.size());
  for (uint32_t i = 0; i < metadata->size(); ++i) {
    EXPECT_EQ(metadata->Get(i)->key()->str(), spec_.metadata[i].key);
    Result<MetadataValue> value = metadata_value(*metadata->Get(i));
    ASSERT_TRUE(value.ok()) << value.status().to_string();
    EXPECT_EQ(*value, spec_.metadata[i].value) << spec_.metadata[i].key;
  }
  EXPECT_EQ(*metadata_int(*file_, "num_layers"), -12);
  EXPECT_EQ(*metadata_float(*file_, "rope_theta"), 10000.5);
  EXPECT_EQ(*metadata_float(*file_, "num_layers"), -12.0);  // an int reads as a float too
  EXPECT_EQ(*metadata_string(*file_, "architecture"), "llama");
  EXPECT_EQ(*metadata_bool(*file_, "tie_embeddings"), true);
  EXPECT_EQ(*metadata_int_list(*file_, "eos_token_ids"), (std::vector<int64_t>{2, 32000, -1}));

  EXPECT_EQ(metadata_value_string(*file_->find_metadata("num_layers")), "-12");
  EXPECT_EQ(metadata_value_string(*file_->find_metadata("rope_theta")), "10000.5");
  EXPECT_EQ(metadata_value_string(*file_->find_metadata("architecture")), "llama");
  EXPECT_EQ(metadata_value_string(*file_->find_metadata("tie_embeddings")), "true");
  EXPECT_EQ(metadata_value_string(*file_->find_metadata("eos_token_ids")), "[2,32000,-1]");
}

TEST_F(ProgramRoundTripTest, MetadataErrorsNameTheKeyAndTypes) {
  Result<int64_t> missing = metadata_int(*file_, "hidden_size");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_PRED_FORMAT2(IsSubstring, "metadata key 'hidden_size' is missing", missing.status().message());

  Result<int64_t> wrong = metadata_int(*file_, "architecture");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_PRED_FORMAT2(IsSubstring, "metadata 'architecture': expected int, found string", wrong.status().message());

  Result<bool> not_bool = metadata_bool(*file_, "num_layers");
  ASSERT_FALSE(not_bool.ok());
  EXPECT_PRED_FORMAT2(IsSubstring, "expected bool, found int", not_bool.status().message());
  Result<std::vector<int64_t>> not_list = metadata_int_list(*file_, "rope_theta");
  ASSERT_FALSE(not_list.ok());
  EXPECT_PRED_FORMAT2(IsSubstring, "expected int list, found float", not_list.status().message());
}

TEST_F(ProgramRoundTripTest, ConstantsRoundTripAlignedAndZeroCopy) {
  const auto* constants = file_->program().constants();
  ASSERT_NE(constants, nullptr);
  ASSERT_EQ(constants->size(), spec_.constants.size());
  const std::vector<uint8_t> raw_file = read_file_bytes(path_);
  const FileHeader& header = file_->header();
  const uint8_t* mapping_base = nullptr;
  for (uint32_t c = 0; c < constants->size(); ++c) {
    const fb::Constant& constant = *constants->Get(c);
    const ConstantSpec& expected = spec_.constants[c];
    SCOPED_TRACE(expected.name);
    EXPECT_EQ(constant.name()->str(), expected.name);
    EXPECT_EQ(constant.dtype(), static_cast<uint8_t>(expected.dtype));
    EXPECT_EQ(as_vector(constant.shape()), expected.shape);
    const std::vector<uint8_t> bytes = source_bytes(*expected.source);
    EXPECT_EQ(constant.size(), bytes.size());
    std::span<const uint8_t> view = file_->constant_bytes(c);
    EXPECT_EQ(as_vector(view), bytes);

    const fb::Segment& segment = *file_->program().segments()->Get(constant.segment());
    const uint64_t file_offset = header.data_offset + segment.offset() + constant.offset();
    ASSERT_LE(file_offset + bytes.size(), raw_file.size());
    EXPECT_EQ(std::vector<uint8_t>(raw_file.begin() + static_cast<std::ptrdiff_t>(file_offset),
                                   raw_file.begin() + static_cast<std::ptrdiff_t>(file_offset + bytes.size())),
              bytes);
    if (bytes.size() >= kLargeConstantBytes) {
      EXPECT_EQ(file_offset % 4096, 0u);
      EXPECT_EQ(segment.alignment(), 4096u);
      EXPECT_EQ(constant.offset(), 0u);
    } else {
      EXPECT_EQ(file_offset % 64, 0u);
    }
    // Zero-copy: every view sits at its file offset from one page-aligned base (the mapping).
    const uint8_t* base = view.data() - file_offset;
    if (mapping_base == nullptr) {
      mapping_base = base;
    }
    EXPECT_EQ(base, mapping_base);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(base) % 4096, 0u);
  }
  EXPECT_TRUE(file_->constant_bytes(constants->size()).empty());

  // from_bytes over caller memory: views point straight into it.
  Result<std::unique_ptr<ProgramFile>> in_memory = ProgramFile::from_bytes(raw_file, "copy");
  ASSERT_TRUE(in_memory.ok()) << in_memory.status().to_string();
  for (uint32_t c = 0; c < constants->size(); ++c) {
    const fb::Constant& constant = *constants->Get(c);
    const fb::Segment& segment = *file_->program().segments()->Get(constant.segment());
    EXPECT_EQ((*in_memory)->constant_bytes(c).data(),
              raw_file.data() + header.data_offset + segment.offset() + constant.offset());
  }
}

TEST_F(ProgramRoundTripTest, MethodsRoundTrip) {
  const auto* methods = file_->program().methods();
  ASSERT_NE(methods, nullptr);
  ASSERT_EQ(methods->size(), spec_.methods.size());
  EXPECT_EQ(file_->find_method("missing"), nullptr);
  for (const MethodSpec& expected : spec_.methods) {
    SCOPED_TRACE(expected.name);
    const fb::Method* method = file_->find_method(expected.name);
    ASSERT_NE(method, nullptr);
    ASSERT_NE(method->memory_plan(), nullptr);
    EXPECT_EQ(method->memory_plan()->arena_size(), expected.arena_size);
    EXPECT_EQ(method->memory_plan()->arena_alignment(), expected.arena_alignment);

    auto check_io = [](const auto* io, const std::vector<IoSpec>& specs) {
      ASSERT_NE(io, nullptr);
      ASSERT_EQ(io->size(), specs.size());
      for (uint32_t i = 0; i < io->size(); ++i) {
        EXPECT_EQ(io->Get(i)->name()->str(), specs[i].name);
        EXPECT_EQ(io->Get(i)->value(), specs[i].value);
        EXPECT_EQ(io->Get(i)->mutable_(), specs[i].is_mutable);
      }
    };
    check_io(method->inputs(), expected.inputs);
    check_io(method->outputs(), expected.outputs);

    ASSERT_NE(method->values(), nullptr);
    ASSERT_EQ(method->values()->size(), expected.values.size());
    for (uint32_t v = 0; v < expected.values.size(); ++v) {
      const fb::Value& value = *method->values()->Get(v);
      EXPECT_EQ(value.dtype(), static_cast<uint8_t>(expected.values[v].dtype)) << v;
      EXPECT_EQ(as_vector(value.shape()), expected.values[v].shape) << v;
      EXPECT_EQ(static_cast<uint8_t>(value.storage()), static_cast<uint8_t>(expected.values[v].storage)) << v;
      EXPECT_EQ(value.index(), expected.values[v].index) << v;
    }

    ASSERT_NE(method->instructions(), nullptr);
    ASSERT_EQ(method->instructions()->size(), expected.instructions.size());
    for (uint32_t n = 0; n < expected.instructions.size(); ++n) {
      const fb::InstructionEntry& entry = *method->instructions()->Get(n);
      if (const auto* call = std::get_if<KernelCallSpec>(&expected.instructions[n])) {
        const fb::KernelCall* kernel = entry.instruction_as_KernelCall();
        ASSERT_NE(kernel, nullptr) << n;
        EXPECT_EQ(kernel->op()->str(), call->op);
        EXPECT_EQ(as_vector(kernel->inputs()), call->inputs);
        EXPECT_EQ(as_vector(kernel->outputs()), call->outputs);
        Result<Attributes> attributes = attributes_from_fb(kernel->attributes());
        ASSERT_TRUE(attributes.ok()) << attributes.status().to_string();
        EXPECT_EQ(*attributes, call->attributes);
      } else {
        const auto& expected_call = std::get<DelegateCallSpec>(expected.instructions[n]);
        const fb::DelegateCall* delegate_call = entry.instruction_as_DelegateCall();
        ASSERT_NE(delegate_call, nullptr) << n;
        EXPECT_EQ(delegate_call->delegate(), expected_call.delegate);
        EXPECT_EQ(as_vector(delegate_call->inputs()), expected_call.inputs);
        EXPECT_EQ(as_vector(delegate_call->outputs()), expected_call.outputs);
      }
    }
  }
  // Every attribute type came through (the sample uses all four).
  const fb::KernelCall* linear = file_->find_method("decode")->instructions()->Get(0)->instruction_as_KernelCall();
  Result<Attributes> attributes = attributes_from_fb(linear->attributes());
  ASSERT_TRUE(attributes.ok());
  EXPECT_EQ(*attributes->get_int("axis"), -1);
  EXPECT_EQ(*attributes->get_float("eps"), 1e-6);
  EXPECT_EQ(*attributes->get_string("mode"), "rope_neox");
  EXPECT_EQ(*attributes->get_ints("perm"), (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_EQ(linear->inputs()->Get(2), kAbsentValue);
}

TEST_F(ProgramRoundTripTest, DelegatesAndFilesRoundTrip) {
  const auto* delegates = file_->program().delegates();
  ASSERT_NE(delegates, nullptr);
  ASSERT_EQ(delegates->size(), 1u);
  const fb::Delegate& delegate = *delegates->Get(0);
  const DelegateSpec& expected = spec_.delegates[0];
  EXPECT_EQ(delegate.backend_id()->str(), expected.backend_id);
  ASSERT_NE(delegate.compile_specs(), nullptr);
  ASSERT_EQ(delegate.compile_specs()->size(), expected.compile_specs.size());
  for (uint32_t i = 0; i < expected.compile_specs.size(); ++i) {
    EXPECT_EQ(delegate.compile_specs()->Get(i)->key()->str(), expected.compile_specs[i].key);
    EXPECT_EQ(as_vector(delegate.compile_specs()->Get(i)->value()), expected.compile_specs[i].value);
  }
  EXPECT_EQ(as_vector(delegate.output_order()), expected.output_order);
  std::span<const uint8_t> blob = file_->segment(delegate.blob_segment());
  EXPECT_EQ(as_vector(blob), source_bytes(*expected.blob));
  EXPECT_EQ(file_->program().segments()->Get(delegate.blob_segment())->offset() % 64, 0u);

  for (const EmbeddedFileSpec& file : spec_.files) {
    std::optional<std::span<const uint8_t>> contents = file_->embedded_file(file.name);
    ASSERT_TRUE(contents.has_value()) << file.name;
    EXPECT_EQ(as_vector(*contents), source_bytes(*file.contents)) << file.name;
  }
  EXPECT_FALSE(file_->embedded_file("vocab.txt").has_value());
  EXPECT_TRUE(file_->segment(1000).empty());
}

// Every data segment carries the checksum of its bytes; verify_contents reads them all and names
// the first segment that differs, and what it holds.
TEST_F(ProgramRoundTripTest, SegmentChecksumsVerifyAndNameWhatChanged) {
  EXPECT_EQ(file_->checksum_kind(), "xxh3-64");
  EXPECT_EQ(file_->header().minor_version, 2);
  const auto* segments = file_->program().segments();
  ASSERT_NE(segments, nullptr);
  for (uint32_t i = 0; i < segments->size(); ++i) {
    EXPECT_EQ(segments->Get(i)->checksum(), segment_checksum(file_->segment(i))) << "segment " << i;
  }
  EXPECT_TRUE(file_->verify_contents().ok()) << file_->verify_contents().to_string();

  // One flipped bit in a constant's bytes, as a bad disk or a truncated copy leaves it.
  const fb::Constant* constant = file_->program().constants()->Get(0);
  std::vector<uint8_t> bytes = read_file_bytes(path_);
  const uint64_t at = file_->header().data_offset + segments->Get(constant->segment())->offset() + constant->offset();
  bytes[at] ^= 0x01;
  auto corrupted = ProgramFile::from_bytes(bytes, "corrupted.slm");
  ASSERT_TRUE(corrupted.ok()) << "opening stays lazy: " << corrupted.status().to_string();
  const Status status = (*corrupted)->verify_contents();
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), ::testing::HasSubstr(str_cat("segment ", constant->segment(), " (constant '",
                                                             constant->name()->string_view(), "'")));
  EXPECT_THAT(status.message(), ::testing::HasSubstr("differs from what was written"));
}

TEST(ProgramWriterTest, AFileWithoutChecksumsLoadsAndSaysSo) {
  ScratchDir dir;
  const std::string path = dir.path("old.slm");
  WriteOptions options;
  options.record_checksums = false;
  ASSERT_TRUE(write_program(sample_spec(), path, options).ok());
  auto file = ProgramFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ((*file)->header().minor_version, 1);
  EXPECT_EQ((*file)->checksum_kind(), "");
  const Status status = (*file)->verify_contents();
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("records no checksums"));
}

TEST(ProgramWriterTest, EmptyProgramRoundTrips) {
  ScratchDir dir;
  const std::string path = dir.path("empty.slm");
  Result<WriteSummary> summary = write_program(ProgramSpec{}, path);
  ASSERT_TRUE(summary.ok()) << summary.status().to_string();
  Result<std::unique_ptr<ProgramFile>> file = ProgramFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ((*file)->header().data_size, 0u);
  EXPECT_EQ((*file)->file_size(), (*file)->header().data_offset);
}

// The writer sends whole 2 MiB blocks: constants that start, end and lie inside blocks, or span
// several, with small ones between, read back byte for byte.
TEST(ProgramWriterTest, ConstantsAcrossTheWriteBlocksRoundTrip) {
  ScratchDir dir;
  const std::string path = dir.path("blocks.slm");
  ProgramSpec spec;
  const size_t sizes[] = {3, (size_t{2} << 20) - 100, 5 << 20, 4096, (size_t{2} << 20) + 7, 1 << 20, 64};
  for (size_t i = 0; i < std::size(sizes); ++i) {
    spec.constants.push_back(ConstantSpec{str_cat("c", i),
                                          DType::kI8,
                                          {static_cast<int64_t>(sizes[i])},
                                          make_owned_source(pattern_bytes(sizes[i], static_cast<uint32_t>(i + 1)))});
  }
  Result<WriteSummary> summary = write_program(spec, path);
  ASSERT_TRUE(summary.ok()) << summary.status().to_string();
  Result<std::unique_ptr<ProgramFile>> file = ProgramFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ((*file)->file_size(), summary->file_bytes);
  for (uint32_t c = 0; c < std::size(sizes); ++c) {
    EXPECT_EQ(as_vector((*file)->constant_bytes(c)), pattern_bytes(sizes[c], c + 1)) << "constant " << c;
  }
}

TEST(ProgramWriterTest, ReplacesAnExistingFile) {
  ScratchDir dir;
  const std::string path = dir.path("p.slm");
  ASSERT_TRUE(write_program(ProgramSpec{}, path).ok());
  ASSERT_TRUE(write_program(sample_spec(), path).ok());
  Result<std::unique_ptr<ProgramFile>> file = ProgramFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_NE((*file)->find_method("decode"), nullptr);
}

// Writing `spec` fails with InvalidArgument mentioning `expected`, and leaves nothing behind.
void expect_refused(const ProgramSpec& spec, const std::string& expected) {
  ScratchDir dir;
  const std::string path = dir.path("bad.slm");
  Result<WriteSummary> summary = write_program(spec, path);
  ASSERT_FALSE(summary.ok()) << "expected a failure mentioning: " << expected;
  EXPECT_EQ(summary.status().code(), StatusCode::kInvalidArgument) << summary.status().to_string();
  EXPECT_PRED_FORMAT2(IsSubstring, expected, summary.status().message());
  EXPECT_PRED_FORMAT2(IsSubstring, path, summary.status().message());
  EXPECT_TRUE(dir.entries().empty());
}

TEST(ProgramWriterTest, RefusesDuplicateConstantName) {
  ProgramSpec spec = sample_spec();
  spec.constants[3].name = spec.constants[0].name;
  expect_refused(spec, "duplicate constant name 'norm.weight'");
}

TEST(ProgramWriterTest, RefusesSourceSizeMismatch) {
  ProgramSpec spec = sample_spec();
  spec.constants[0].source = make_owned_source(pattern_bytes(60, 9));
  expect_refused(spec, "constant 'norm.weight': size 60 != f32[4,4] = 64 bytes");
}

TEST(ProgramWriterTest, RefusesDanglingValueIndex) {
  ProgramSpec spec = sample_spec();
  std::get<KernelCallSpec>(spec.methods[0].instructions[0]).inputs[1] = 99;
  expect_refused(spec, "method 'decode' instruction 0 (linear): input 1 refers to value 99, the method has 6 values");
}

TEST(ProgramWriterTest, RefusesOtherInconsistencies) {
  {
    ProgramSpec spec = sample_spec();
    spec.methods[1].name = "decode";
    expect_refused(spec, "duplicate method name 'decode'");
  }
  {
    ProgramSpec spec = sample_spec();
    spec.methods[0].outputs.push_back({"tokens", 0, false});
    expect_refused(spec, "method 'decode' output 'tokens': value 0 is not stored as Output 1");
  }
  {
    ProgramSpec spec = sample_spec();
    spec.methods[0].values[5].index = 100;  // 64 bytes at 100 in a 128-byte arena
    expect_refused(spec, "method 'decode' value 5: arena offset 100 + 64 bytes is out of range of the 128-byte arena");
  }
  {
    ProgramSpec spec = sample_spec();
    spec.methods[0].values[3].shape = {16};
    expect_refused(spec, "method 'decode' value 3 is f32[16] but constant 'norm.weight' is f32[4,4]");
  }
  {
    ProgramSpec spec = sample_spec();
    spec.delegates[0].output_order = {1, 1};
    expect_refused(spec, "delegate 0: output_order is not a permutation of [0, 2)");
  }
  {
    ProgramSpec spec = sample_spec();
    spec.metadata.push_back({"architecture", int64_t{1}});
    expect_refused(spec, "duplicate metadata key 'architecture'");
  }
  {
    ProgramSpec spec = sample_spec();
    spec.files[1].name = "";
    expect_refused(spec, "embedded file 1: embedded file name is empty");
  }
  {
    ProgramSpec spec = sample_spec();
    spec.constants[1].source = nullptr;
    expect_refused(spec, "constant 'bias.f16' has no byte source");
  }
}

class FailingSource final : public ByteSource {
 public:
  uint64_t size_bytes() const override { return 64; }
  Status read(std::span<uint8_t>) const override { return unavailable("checkpoint shard went away"); }
};

TEST(ProgramWriterTest, SourceFailureLeavesNoFileBehind) {
  ScratchDir dir;
  ProgramSpec spec = sample_spec();
  spec.constants[0].source = std::make_shared<FailingSource>();
  const std::string path = dir.path("p.slm");
  Result<WriteSummary> summary = write_program(spec, path);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), StatusCode::kUnavailable);
  EXPECT_PRED_FORMAT2(IsSubstring, "reading constant 'norm.weight': checkpoint shard went away",
                      summary.status().message());
  EXPECT_TRUE(dir.entries().empty());
}

TEST(ProgramWriterTest, UnwritableDirectoryIsUnavailable) {
  ScratchDir dir;
  const std::string path = dir.path("no_such_dir/p.slm");
  Result<WriteSummary> summary = write_program(sample_spec(), path);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), StatusCode::kUnavailable);
  EXPECT_PRED_FORMAT2(IsSubstring, path, summary.status().message());
}

}  // namespace
}  // namespace staticlm
