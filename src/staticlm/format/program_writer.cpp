// SPDX-License-Identifier: Apache-2.0
#include "staticlm/format/program_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include <sys/stat.h>

#include "staticlm/core/checked_math.h"
#include "staticlm/format/file_header.h"
#include "staticlm/format/method_builder.h"
#include "staticlm/format/program_generated.h"
#include "staticlm/format/program_verifier.h"
#include "staticlm/format/segment_checksum.h"

namespace staticlm {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the header is written with memcpy; a big-endian writer would need byte swaps");

// One source's bytes at `offset` inside its segment.
struct Piece {
  uint64_t offset = 0;
  const ByteSource* source = nullptr;
  std::string what;  // "constant 'x'", for messages
};

struct SegmentPlan {
  uint64_t offset = 0;  // in the data area
  uint64_t size = 0;
  uint32_t alignment = 0;
  std::vector<Piece> pieces;
};

struct ConstantPlacement {
  uint32_t segment = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

// Where every byte of the data area goes; computed from the sources' sizes alone.
struct DataLayout {
  std::vector<SegmentPlan> segments;
  std::vector<ConstantPlacement> constants;
  std::vector<uint32_t> file_segments;
  std::vector<uint32_t> blob_segments;
  std::vector<uint32_t> named_data_segments;
  uint64_t data_size = 0;
};

Status too_large() {
  return invalid_argument("program data does not fit in 64-bit offsets");
}

uint32_t add_segment(DataLayout& layout, uint32_t alignment) {
  layout.segments.push_back(SegmentPlan{0, 0, alignment, {}});
  return static_cast<uint32_t>(layout.segments.size() - 1);
}

// Appends a source as the whole of a new segment.
uint32_t add_source_segment(DataLayout& layout, uint32_t alignment, const ByteSource* source, std::string what) {
  const uint32_t index = add_segment(layout, alignment);
  SegmentPlan& segment = layout.segments[index];
  segment.size = source == nullptr ? 0 : source->size_bytes();
  if (source != nullptr) {
    segment.pieces.push_back(Piece{0, source, std::move(what)});
  }
  return index;
}

Result<DataLayout> plan_layout(const ProgramSpec& spec) {
  DataLayout layout;
  // Small constants share segment 0 (when there are any), each 64-aligned inside it; large ones
  // get a page-aligned segment each so the runtime can use them straight from the mapping.
  std::optional<uint32_t> shared;
  for (const ConstantSpec& constant : spec.constants) {
    if (constant.source == nullptr) {
      return invalid_argument("constant '", constant.name, "' has no byte source");
    }
    const uint64_t size = constant.source->size_bytes();
    const std::string what = str_cat("constant '", constant.name, "'");
    if (size >= kLargeConstantBytes) {
      const uint32_t index = add_source_segment(layout, kPageAlignment, constant.source.get(), what);
      layout.constants.push_back(ConstantPlacement{index, 0, size});
      continue;
    }
    if (!shared) {
      shared = add_segment(layout, kSegmentAlignment);
    }
    SegmentPlan& segment = layout.segments[*shared];
    auto offset = checked_align_up(segment.size, kSegmentAlignment);
    auto end = offset ? checked_add(*offset, size) : std::nullopt;
    if (!end) {
      return too_large();
    }
    segment.pieces.push_back(Piece{*offset, constant.source.get(), what});
    segment.size = *end;
    layout.constants.push_back(ConstantPlacement{*shared, *offset, size});
  }
  for (const EmbeddedFileSpec& file : spec.files) {
    if (file.contents == nullptr) {
      return invalid_argument("embedded file '", file.name, "' has no byte source");
    }
    layout.file_segments.push_back(
        add_source_segment(layout, kSegmentAlignment, file.contents.get(), str_cat("embedded file '", file.name, "'")));
  }
  for (size_t d = 0; d < spec.delegates.size(); ++d) {
    // A delegate without a blob gets an empty segment, so blob_segment is always valid.
    layout.blob_segments.push_back(
        add_source_segment(layout, kSegmentAlignment, spec.delegates[d].blob.get(), str_cat("delegate ", d, " blob")));
  }
  for (const NamedDataSpec& entry : spec.named_data) {
    if (entry.source == nullptr) {
      return invalid_argument("named data '", entry.key, "' has no byte source");
    }
    if (!is_power_of_two(entry.alignment) || entry.alignment > kPageAlignment) {
      return invalid_argument("named data '", entry.key, "': alignment ", entry.alignment,
                              " is not a power of two up to ", kPageAlignment);
    }
    const uint64_t size = entry.source->size_bytes();
    const auto alignment = static_cast<uint32_t>(
        std::max<uint64_t>({entry.alignment, kSegmentAlignment, size >= kLargeConstantBytes ? kPageAlignment : 0}));
    layout.named_data_segments.push_back(
        add_source_segment(layout, alignment, entry.source.get(), str_cat("named data '", entry.key, "'")));
  }
  uint64_t cursor = 0;
  for (SegmentPlan& segment : layout.segments) {
    auto offset = checked_align_up(cursor, segment.alignment);
    auto end = offset ? checked_add(*offset, segment.size) : std::nullopt;
    if (!end) {
      return too_large();
    }
    segment.offset = *offset;
    cursor = *end;
  }
  layout.data_size = cursor;
  return layout;
}

// ---- flatbuffer ----

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

fb::MetadataType metadata_type(const MetadataValue& value) {
  switch (value.index()) {
    case 0: return fb::MetadataType::Int;
    case 1: return fb::MetadataType::Float;
    case 2: return fb::MetadataType::String;
    case 3: return fb::MetadataType::Bool;
    default: return fb::MetadataType::IntList;
  }
}

Offset<fb::MetadataEntry> build_metadata(FlatBufferBuilder& builder, const MetadataSpec& entry) {
  auto key = builder.CreateString(entry.key);
  Offset<flatbuffers::String> string_value;
  Offset<flatbuffers::Vector<int64_t>> int_list;
  if (const auto* text = std::get_if<std::string>(&entry.value)) {
    string_value = builder.CreateString(*text);
  }
  if (const auto* list = std::get_if<std::vector<int64_t>>(&entry.value)) {
    int_list = builder.CreateVector(*list);
  }
  const auto* int_value = std::get_if<int64_t>(&entry.value);
  const auto* float_value = std::get_if<double>(&entry.value);
  const auto* bool_value = std::get_if<bool>(&entry.value);
  return fb::CreateMetadataEntry(builder, key, metadata_type(entry.value), int_value ? *int_value : 0,
                                 float_value ? *float_value : 0.0, string_value, bool_value ? *bool_value : false,
                                 int_list);
}

Offset<fb::Delegate> build_delegate(FlatBufferBuilder& builder, const DelegateSpec& delegate, uint32_t blob_segment) {
  auto backend_id = builder.CreateString(delegate.backend_id);
  std::vector<Offset<fb::CompileSpec>> specs;
  for (const CompileSpecEntry& entry : delegate.compile_specs) {
    specs.push_back(fb::CreateCompileSpec(builder, builder.CreateString(entry.key), builder.CreateVector(entry.value)));
  }
  auto specs_offset = builder.CreateVector(specs);
  auto order = builder.CreateVector(delegate.output_order);
  return fb::CreateDelegate(builder, backend_id, specs_offset, blob_segment, order);
}

void build_program(FlatBufferBuilder& builder, const ProgramSpec& spec, const DataLayout& layout,
                   bool record_checksums) {
  std::vector<Offset<fb::MetadataEntry>> metadata;
  for (const MetadataSpec& entry : spec.metadata) {
    metadata.push_back(build_metadata(builder, entry));
  }
  auto metadata_offset = builder.CreateVector(metadata);
  std::vector<Offset<fb::Segment>> segments;
  for (const SegmentPlan& segment : layout.segments) {
    // The checksum is filled in once the segment's bytes are written (write_program).
    segments.push_back(fb::CreateSegment(builder, segment.offset, segment.size, segment.alignment, 0));
  }
  auto segments_offset = builder.CreateVector(segments);
  std::vector<Offset<fb::Constant>> constants;
  for (size_t c = 0; c < spec.constants.size(); ++c) {
    const ConstantSpec& constant = spec.constants[c];
    const ConstantPlacement& placement = layout.constants[c];
    constants.push_back(fb::CreateConstant(builder, builder.CreateString(constant.name),
                                           static_cast<uint8_t>(constant.dtype), builder.CreateVector(constant.shape),
                                           placement.segment, placement.offset, placement.size));
  }
  auto constants_offset = builder.CreateVector(constants);
  std::vector<Offset<fb::Method>> methods;
  for (const MethodSpec& method : spec.methods) {
    methods.push_back(build_method(builder, method));
  }
  auto methods_offset = builder.CreateVector(methods);
  std::vector<Offset<fb::Delegate>> delegates;
  for (size_t d = 0; d < spec.delegates.size(); ++d) {
    delegates.push_back(build_delegate(builder, spec.delegates[d], layout.blob_segments[d]));
  }
  auto delegates_offset = builder.CreateVector(delegates);
  std::vector<Offset<fb::EmbeddedFile>> files;
  for (size_t f = 0; f < spec.files.size(); ++f) {
    files.push_back(fb::CreateEmbeddedFile(builder, builder.CreateString(spec.files[f].name), layout.file_segments[f]));
  }
  auto files_offset = builder.CreateVector(files);
  std::vector<Offset<fb::NamedData>> named_data;
  for (size_t n = 0; n < spec.named_data.size(); ++n) {
    named_data.push_back(
        fb::CreateNamedData(builder, builder.CreateString(spec.named_data[n].key), layout.named_data_segments[n]));
  }
  auto named_data_offset = builder.CreateVector(named_data);
  Offset<flatbuffers::String> checksum_kind;
  if (record_checksums) {
    checksum_kind = builder.CreateString(kSegmentChecksumKind);
  }
  auto root = fb::CreateProgram(builder, metadata_offset, segments_offset, constants_offset, methods_offset,
                                delegates_offset, files_offset, named_data_offset, checksum_kind);
  builder.Finish(root, fb::ProgramIdentifier());
}

// ---- file output ----

// A temporary file beside the destination, renamed into place by commit(); removed if the
// write fails or is abandoned, so a failed export never leaves a partial program behind.
class TempFile {
 public:
  TempFile() = default;
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    if (!temp_path_.empty()) {
      ::unlink(temp_path_.c_str());
    }
  }

  Status create(const std::string& path) {
    path_ = path;
    std::string pattern = path + ".tmp-XXXXXX";
    fd_ = ::mkstemp(pattern.data());
    if (fd_ < 0) {
      return unavailable("cannot create a temporary file beside '", path, "': ", std::strerror(errno));
    }
    temp_path_ = pattern;
    buffer_.reset(new (std::nothrow) uint8_t[kBlockBytes]);
    if (buffer_ == nullptr) {
      return resource_exhausted("cannot allocate the ", kBlockBytes, "-byte write buffer for '", path, "'");
    }
    // mkstemp creates the file 0600; a program file is an ordinary readable artifact.
    if (::fchmod(fd_, 0644) != 0) {
      return io_error("cannot set permissions of");
    }
    return ok_status();
  }

  // Bytes reach the file in whole blocks of kBlockBytes at offsets that are multiples of it, so
  // the page cache can hold the new file in 2 MiB folios, which a run right after the export maps
  // as huge pages for its weight streams. Written tensor by tensor, most of a program was not, and
  // decode ran slower until its pages were evicted and read back (`staticlm bench` right after
  // `staticlm export`).
  Status write(std::span<const uint8_t> bytes) {
    if (hashing_ != nullptr) {
      hashing_->update(bytes);
    }
    position_ += bytes.size();
    while (!bytes.empty()) {
      if (buffered_ == 0 && bytes.size() >= kBlockBytes) {
        // Aligned already (nothing buffered): whole blocks go straight from the caller's bytes.
        const size_t whole = bytes.size() / kBlockBytes * kBlockBytes;
        STATICLM_RETURN_IF_ERROR(write_all(bytes.first(whole)));
        bytes = bytes.subspan(whole);
        continue;
      }
      const size_t take = std::min(bytes.size(), kBlockBytes - buffered_);
      std::memcpy(buffer_.get() + buffered_, bytes.data(), take);
      buffered_ += take;
      bytes = bytes.subspan(take);
      if (buffered_ == kBlockBytes) {
        STATICLM_RETURN_IF_ERROR(flush());
      }
    }
    return ok_status();
  }

  // Writes zeros up to file offset `offset` (never backwards).
  Status pad_to(uint64_t offset) {
    static constexpr uint8_t kZeros[4096] = {};
    while (position_ < offset) {
      const uint64_t count = std::min<uint64_t>(offset - position_, sizeof(kZeros));
      STATICLM_RETURN_IF_ERROR(write(std::span<const uint8_t>(kZeros, static_cast<size_t>(count))));
    }
    return ok_status();
  }

  Status commit() {
    STATICLM_RETURN_IF_ERROR(flush());
    if (::fsync(fd_) != 0) {
      return io_error("cannot flush");
    }
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) {
      return io_error("cannot close");
    }
    if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
      return io_error("cannot rename into place");
    }
    temp_path_.clear();
    return ok_status();
  }

  uint64_t position() const { return position_; }

  // Feeds every byte written from now on to `hasher` (nullptr: stop).
  void hash_into(SegmentHasher* hasher) { hashing_ = hasher; }

  // Writes `bytes` again at file offset `offset` (already written; same length).
  Status rewrite(uint64_t offset, std::span<const uint8_t> bytes) {
    STATICLM_RETURN_IF_ERROR(flush());
    while (!bytes.empty()) {
      const ssize_t written = ::pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset));
      if (written < 0) {
        if (errno == EINTR) {
          continue;
        }
        return io_error("cannot write");
      }
      bytes = bytes.subspan(static_cast<size_t>(written));
      offset += static_cast<uint64_t>(written);
    }
    return ok_status();
  }

 private:
  Status io_error(std::string_view action) const {
    return unavailable(action, " '", temp_path_, "' (for '", path_, "'): ", std::strerror(errno));
  }

  static constexpr size_t kBlockBytes = size_t{2} << 20;

  Status flush() {
    const size_t count = std::exchange(buffered_, 0);
    return write_all(std::span<const uint8_t>(buffer_.get(), count));
  }

  Status write_all(std::span<const uint8_t> bytes) {
    while (!bytes.empty()) {
      const ssize_t written = ::write(fd_, bytes.data(), bytes.size());
      if (written < 0) {
        if (errno == EINTR) {
          continue;
        }
        return io_error("cannot write");
      }
      bytes = bytes.subspan(static_cast<size_t>(written));
    }
    return ok_status();
  }

  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  uint64_t position_ = 0;  // bytes written by the caller, buffered ones included
  std::unique_ptr<uint8_t[]> buffer_;
  size_t buffered_ = 0;
  SegmentHasher* hashing_ = nullptr;
};

// One reusable buffer as large as the largest source read so far: the writer's peak memory.
class ReadBuffer {
 public:
  Result<std::span<uint8_t>> get(uint64_t size, const std::string& what) {
    if (size > capacity_) {
      data_.reset(new (std::nothrow) uint8_t[size]);
      if (data_ == nullptr) {
        capacity_ = 0;
        return resource_exhausted(what, ": cannot allocate ", size, " bytes to stage its data");
      }
      capacity_ = size;
    }
    return std::span<uint8_t>(data_.get(), static_cast<size_t>(size));
  }

 private:
  std::unique_ptr<uint8_t[]> data_;
  uint64_t capacity_ = 0;
};

}  // namespace

Result<WriteSummary> write_program(const ProgramSpec& spec, const std::string& path, const WriteOptions& options) {
  const std::string context = str_cat("program spec for '", path, "'");
  auto layout_result = plan_layout(spec);
  if (!layout_result.ok()) {
    return layout_result.status().with_context(context);
  }
  const DataLayout layout = std::move(layout_result).value();

  flatbuffers::FlatBufferBuilder builder(64 * 1024);
  // Zeros must be stored too: a reader must see storage = Arena, index = 0 explicitly.
  builder.ForceDefaults(true);
  build_program(builder, spec, layout, options.record_checksums);
  const uint8_t* flatbuffer = builder.GetBufferPointer();
  const uint64_t flatbuffer_size = builder.GetSize();
  // The reader's own rules, applied before a byte is written.
  STATICLM_RETURN_IF_ERROR(
      verify_program_semantics(*fb::GetProgram(flatbuffer), layout.data_size).with_context(context));

  FileHeader header{};
  std::memcpy(header.magic, kProgramMagic, sizeof(header.magic));
  header.major_version = kFormatMajorVersion;
  // A file without checksums is what format 1.1 wrote.
  header.minor_version = options.record_checksums ? kFormatMinorVersion : 1;
  header.header_size = kFileHeaderSize;
  header.flatbuffer_offset = kFileHeaderSize;
  header.flatbuffer_size = flatbuffer_size;
  auto data_offset = checked_align_up(kFileHeaderSize + flatbuffer_size, kPageAlignment);
  auto file_bytes = data_offset ? checked_add(*data_offset, layout.data_size) : std::nullopt;
  if (!file_bytes) {
    return too_large().with_context(context);
  }
  header.data_offset = *data_offset;
  header.data_size = layout.data_size;

  TempFile file;
  STATICLM_RETURN_IF_ERROR(file.create(path));
  STATICLM_RETURN_IF_ERROR(file.write(std::span(reinterpret_cast<const uint8_t*>(&header), sizeof(header))));
  STATICLM_RETURN_IF_ERROR(file.write(std::span(flatbuffer, static_cast<size_t>(flatbuffer_size))));
  const std::span<const uint8_t> flatbuffer_bytes(flatbuffer, static_cast<size_t>(flatbuffer_size));

  WriteSummary summary;
  summary.file_bytes = *file_bytes;
  for (const ConstantPlacement& placement : layout.constants) {
    summary.constant_bytes += placement.size;
  }
  for (uint32_t segment : layout.named_data_segments) {
    summary.named_data_bytes += layout.segments[segment].size;
  }
  ReadBuffer buffer;
  SegmentHasher hasher;
  std::vector<uint64_t> checksums;
  for (const SegmentPlan& segment : layout.segments) {
    summary.largest_segment_bytes = std::max(summary.largest_segment_bytes, segment.size);
    // The checksum covers exactly the segment's bytes, its own padding included, not the gap
    // that aligns its start.
    STATICLM_RETURN_IF_ERROR(file.pad_to(header.data_offset + segment.offset));
    hasher.reset();
    file.hash_into(&hasher);
    for (const Piece& piece : segment.pieces) {
      STATICLM_RETURN_IF_ERROR(file.pad_to(header.data_offset + segment.offset + piece.offset));
      STATICLM_ASSIGN_OR_RETURN(std::span<uint8_t> bytes, buffer.get(piece.source->size_bytes(), piece.what));
      Status read = piece.source->read(bytes);
      if (!read.ok()) {
        return read.with_context(str_cat("writing '", path, "': reading ", piece.what));
      }
      STATICLM_RETURN_IF_ERROR(file.write(bytes));
    }
    STATICLM_RETURN_IF_ERROR(file.pad_to(header.data_offset + segment.offset + segment.size));
    file.hash_into(nullptr);
    checksums.push_back(hasher.digest());
    if (options.on_progress) {
      options.on_progress(WriteProgress{file.position(), summary.file_bytes});
    }
  }
  // An empty data area still starts on its page, so the file always holds [data_offset, +size).
  STATICLM_RETURN_IF_ERROR(file.pad_to(summary.file_bytes));
  if (file.position() != summary.file_bytes) {
    return internal_error("wrote ", file.position(), " bytes to '", path, "', planned ", summary.file_bytes);
  }
  if (options.record_checksums) {
    // The flatbuffer went out first, with zero checksums; now that every segment has been hashed,
    // the same bytes are written again with the checksums in place (same size, same offsets).
    fb::Program* program = fb::GetMutableProgram(builder.GetBufferPointer());
    for (size_t i = 0; i < checksums.size(); ++i) {
      if (!program->mutable_segments()
               ->GetMutableObject(static_cast<flatbuffers::uoffset_t>(i))
               ->mutate_checksum(checksums[i])) {
        return internal_error("segment ", i, " of '", path, "' has no checksum field to fill");
      }
    }
    STATICLM_RETURN_IF_ERROR(file.rewrite(kFileHeaderSize, flatbuffer_bytes));
  }
  STATICLM_RETURN_IF_ERROR(file.commit());
  return summary;
}

}  // namespace staticlm
