// SPDX-License-Identifier: Apache-2.0
#include "staticlm/format/program_file.h"

#include <bit>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "staticlm/core/checked_math.h"
#include "staticlm/format/program_verifier.h"
#include "staticlm/format/segment_checksum.h"

namespace staticlm {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the header is read with memcpy; a big-endian reader would need byte swaps");

// The flatbuffers verifier refuses deeper nesting / more tables than this; ours is ~6 deep, and
// 10M tables is far above any real program while bounding the work a hostile file can cause.
constexpr flatbuffers::uoffset_t kMaxFlatbufferDepth = 64;
constexpr flatbuffers::uoffset_t kMaxFlatbufferTables = 10'000'000;

// Four bytes that may be anything, printed so a message stays readable.
std::string printable(const uint8_t* bytes, size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i) {
    if (std::isprint(bytes[i]) != 0) {
      out += static_cast<char>(bytes[i]);
    } else {
      out += str_cat("\\x", "0123456789abcdef"[bytes[i] >> 4], "0123456789abcdef"[bytes[i] & 15]);
    }
  }
  return out;
}

Status verify_version(const FileHeader& header) {
  if (header.major_version > kFormatMajorVersion) {
    return unimplemented("format version ", header.major_version, ".", header.minor_version,
                         " is newer than this reader (", kFormatMajorVersion, ".x); upgrade staticlm");
  }
  if (header.major_version < kFormatMajorVersion) {
    return unimplemented("format version ", header.major_version, ".", header.minor_version,
                         " is older than this reader supports (", kFormatMajorVersion,
                         ".x); re-export the model with this staticlm (staticlm export)");
  }
  return ok_status();
}

}  // namespace

Result<std::unique_ptr<ProgramFile>> ProgramFile::open(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    if (std::filesystem::exists(std::filesystem::path(path) / "config.json", error)) {
      return invalid_argument("'", path, "' is a Hugging Face checkpoint directory, not a program: make one with ",
                              "`staticlm export ", path, " -o model.slm` and run that");
    }
    return invalid_argument("'", path, "' is a directory, not a program file (.slm)");
  }
  STATICLM_ASSIGN_OR_RETURN(MappedFile mapping, MappedFile::open(path));
  std::unique_ptr<ProgramFile> file(new ProgramFile());
  file->mapping_ = std::move(mapping);
  file->bytes_ = file->mapping_.bytes();
  file->name_ = path;
  STATICLM_RETURN_IF_ERROR(file->verify().with_context(str_cat("'", path, "'")));
  return file;
}

Result<std::unique_ptr<ProgramFile>> ProgramFile::from_bytes(std::span<const uint8_t> bytes, std::string display_name) {
  // The flatbuffer is read in place; its 8-byte fields are only aligned if the bytes are.
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(uint64_t) != 0) {
    return invalid_argument("'", display_name, "': program bytes must start at an 8-byte aligned address");
  }
  std::unique_ptr<ProgramFile> file(new ProgramFile());
  file->bytes_ = bytes;
  file->name_ = std::move(display_name);
  STATICLM_RETURN_IF_ERROR(file->verify().with_context(str_cat("'", file->name_, "'")));
  return file;
}

Status ProgramFile::verify() {
  const uint64_t file_size = bytes_.size();
  if (file_size < kFileHeaderSize) {
    return data_loss("truncated: file is ", file_size, " bytes, the header needs ", kFileHeaderSize);
  }
  std::memcpy(&header_, bytes_.data(), sizeof(header_));
  if (std::memcmp(header_.magic, kProgramMagic, sizeof(kProgramMagic)) != 0) {
    if (std::memcmp(header_.magic, "GGUF", 4) == 0) {
      return invalid_argument("a GGUF file (llama.cpp's format), not a staticlm program: export the model's Hugging ",
                              "Face checkpoint (config.json, *.safetensors, tokenizer) with `staticlm export`");
    }
    if (bytes_[8] == '{') {  // safetensors: an 8-byte header length, then the JSON header
      return invalid_argument("a safetensors file, not a staticlm program: export the checkpoint directory that ",
                              "holds it with `staticlm export`");
    }
    return data_loss("not a staticlm program: bad magic '", printable(bytes_.data(), sizeof(kProgramMagic)),
                     "' (expected 'SLMP')");
  }
  STATICLM_RETURN_IF_ERROR(verify_version(header_));
  if (header_.header_size < kFileHeaderSize) {
    return data_loss("header_size ", header_.header_size, " is smaller than the ", kFileHeaderSize,
                     "-byte header of format ", kFormatMajorVersion, ".x");
  }

  if (header_.flatbuffer_offset < header_.header_size) {
    return data_loss("flatbuffer offset ", header_.flatbuffer_offset, " overlaps the ", header_.header_size,
                     "-byte header");
  }
  if (header_.flatbuffer_offset % alignof(uint64_t) != 0) {
    return data_loss("flatbuffer offset ", header_.flatbuffer_offset, " is not 8-byte aligned");
  }
  if (!range_fits(header_.flatbuffer_offset, header_.flatbuffer_size, file_size)) {
    return data_loss("truncated: the flatbuffer (offset ", header_.flatbuffer_offset, ", ", header_.flatbuffer_size,
                     " bytes) ends past the end of the ", file_size, "-byte file");
  }
  if (header_.flatbuffer_size < 2 * sizeof(flatbuffers::uoffset_t)) {
    return data_loss("corrupt program flatbuffer: ", header_.flatbuffer_size, " bytes is too small");
  }
  if (header_.flatbuffer_size >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return data_loss("corrupt program flatbuffer: ", header_.flatbuffer_size, " bytes exceeds the 2 GiB limit");
  }
  if (header_.data_offset % kPageAlignment != 0) {
    return data_loss("data area offset ", header_.data_offset, " is not page (", kPageAlignment, "-byte) aligned");
  }
  // Cannot overflow: the flatbuffer range fits in the file.
  const uint64_t flatbuffer_end = header_.flatbuffer_offset + header_.flatbuffer_size;
  if (header_.data_offset < flatbuffer_end) {
    return data_loss("data area offset ", header_.data_offset, " overlaps the flatbuffer, which ends at ",
                     flatbuffer_end);
  }
  if (!range_fits(header_.data_offset, header_.data_size, file_size)) {
    return data_loss("truncated: the data area (offset ", header_.data_offset, ", ", header_.data_size,
                     " bytes) ends past the end of the ", file_size, "-byte file");
  }

  const uint8_t* flatbuffer = bytes_.data() + header_.flatbuffer_offset;
  if (!fb::ProgramBufferHasIdentifier(flatbuffer)) {
    return data_loss("corrupt program flatbuffer: identifier is '",
                     printable(flatbuffer + sizeof(flatbuffers::uoffset_t), flatbuffers::kFileIdentifierLength),
                     "', expected '", fb::ProgramIdentifier(), "'");
  }
  flatbuffers::Verifier verifier(flatbuffer, static_cast<size_t>(header_.flatbuffer_size), kMaxFlatbufferDepth,
                                 kMaxFlatbufferTables);
  if (!fb::VerifyProgramBuffer(verifier)) {
    return data_loss("corrupt program flatbuffer: the flatbuffers verifier refused its ", header_.flatbuffer_size,
                     " bytes at offset ", header_.flatbuffer_offset);
  }
  program_ = fb::GetProgram(flatbuffer);
  STATICLM_RETURN_IF_ERROR(verify_program_semantics(*program_, header_.data_size));
  if (const auto* entries = program_->named_data()) {
    for (const fb::NamedData* entry : *entries) {
      named_data_segments_.emplace(entry->key()->string_view(), entry->segment());
    }
  }
  return ok_status();
}

std::span<const uint8_t> ProgramFile::segment(uint32_t index) const {
  const auto* segments = program_->segments();
  if (segments == nullptr || index >= segments->size()) {
    return {};
  }
  const fb::Segment* segment = segments->Get(index);
  return bytes_.subspan(header_.data_offset + segment->offset(), segment->size());
}

std::span<const uint8_t> ProgramFile::constant_bytes(uint32_t index) const {
  const auto* constants = program_->constants();
  if (constants == nullptr || index >= constants->size()) {
    return {};
  }
  const fb::Constant* constant = constants->Get(index);
  return segment(constant->segment()).subspan(constant->offset(), constant->size());
}

std::optional<std::span<const uint8_t>> ProgramFile::embedded_file(std::string_view name) const {
  if (const auto* files = program_->files()) {
    for (const fb::EmbeddedFile* file : *files) {
      if (file->name()->string_view() == name) {
        return segment(file->segment());
      }
    }
  }
  return std::nullopt;
}

std::optional<std::span<const uint8_t>> ProgramFile::named_data(std::string_view key) const {
  auto it = named_data_segments_.find(key);
  if (it == named_data_segments_.end()) {
    return std::nullopt;
  }
  return segment(it->second);
}

const fb::Method* ProgramFile::find_method(std::string_view name) const {
  if (const auto* methods = program_->methods()) {
    for (const fb::Method* method : *methods) {
      if (method->name()->string_view() == name) {
        return method;
      }
    }
  }
  return nullptr;
}

namespace {

std::string hex64(uint64_t value) {
  char text[19];
  std::snprintf(text, sizeof(text), "0x%016" PRIx64, value);
  return text;
}

}  // namespace

std::string_view ProgramFile::checksum_kind() const {
  return program_->checksum_kind() != nullptr ? program_->checksum_kind()->string_view() : std::string_view();
}

Status ProgramFile::verify_contents() const {
  const std::string_view kind = checksum_kind();
  if (kind.empty()) {
    return failed_precondition("'", name_, "' records no checksums (written by staticlm before format 1.2); ",
                               "its contents cannot be verified");
  }
  if (kind != kSegmentChecksumKind) {
    return unimplemented("'", name_, "' records checksums of kind '", kind, "'; this build checks '",
                         kSegmentChecksumKind, "'");
  }
  const auto* segments = program_->segments();
  for (uint32_t i = 0; segments != nullptr && i < segments->size(); ++i) {
    const uint64_t recorded = segments->Get(i)->checksum();
    const uint64_t actual = segment_checksum(segment(i));
    if (actual != recorded) {
      return data_loss("'", name_, "': segment ", i, " (", describe_segment(i), ", ", segments->Get(i)->size(),
                       " bytes at data offset ", segments->Get(i)->offset(), ") differs from what was written: ", kind,
                       " ", hex64(actual), ", recorded ", hex64(recorded));
    }
  }
  return ok_status();
}

std::string ProgramFile::describe_segment(uint32_t index) const {
  std::vector<std::string> holders;
  if (const auto* constants = program_->constants()) {
    for (const fb::Constant* constant : *constants) {
      if (constant->segment() == index) {
        holders.push_back(str_cat("constant '", constant->name()->string_view(), "'"));
      }
    }
  }
  if (const auto* files = program_->files()) {
    for (const fb::EmbeddedFile* file : *files) {
      if (file->segment() == index) {
        holders.push_back(str_cat("embedded file '", file->name()->string_view(), "'"));
      }
    }
  }
  if (const auto* entries = program_->named_data()) {
    for (const fb::NamedData* entry : *entries) {
      if (entry->segment() == index) {
        holders.push_back(str_cat("named data '", entry->key()->string_view(), "'"));
      }
    }
  }
  if (const auto* delegates = program_->delegates()) {
    for (uint32_t d = 0; d < delegates->size(); ++d) {
      if (delegates->Get(d)->blob_segment() == index) {
        holders.push_back(str_cat("delegate ", d, " (", delegates->Get(d)->backend_id()->string_view(), ") blob"));
      }
    }
  }
  if (holders.empty()) {
    return "nothing";
  }
  return holders.size() == 1 ? holders.front() : str_cat(holders.front(), " and ", holders.size() - 1, " more");
}

const fb::MetadataEntry* ProgramFile::find_metadata(std::string_view key) const {
  if (const auto* metadata = program_->metadata()) {
    for (const fb::MetadataEntry* entry : *metadata) {
      if (entry->key()->string_view() == key) {
        return entry;
      }
    }
  }
  return nullptr;
}

}  // namespace staticlm
