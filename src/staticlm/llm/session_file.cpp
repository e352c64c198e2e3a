// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/session_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include <sys/stat.h>

#include "staticlm/core/mapped_file.h"
#include "staticlm/core/str_cat.h"
#include "staticlm/format/metadata.h"
#include "staticlm/format/segment_checksum.h"

namespace staticlm {
namespace {

constexpr std::string_view kMagic = "STATICLM-SESSION";
constexpr uint32_t kVersion = 1;
// magic, version, program checksum, then three sizes.
constexpr size_t kHeaderBytes = 16 + 4 + 8 + 3 * 8;

std::string metadata_text(const ProgramFile& program) {
  std::string text;
  if (const auto* entries = program.program().metadata(); entries != nullptr) {
    for (const fb::MetadataEntry* entry : *entries) {
      text += entry->key()->str() + "=" + metadata_value_string(*entry) + "\n";
    }
  }
  return text;
}

template <typename T>
void put(std::vector<uint8_t>& out, T value) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(&value);
  out.insert(out.end(), bytes, bytes + sizeof(T));
}

template <typename T>
T get(std::span<const uint8_t> bytes, size_t at) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof(T));
  return value;
}

// The first line of `saved` that `here` lacks, as "key: saved=... here=...".
std::string first_difference(std::string_view saved, std::string_view here) {
  auto value_of = [](std::string_view text, std::string_view key) -> std::string_view {
    for (size_t at = 0; at < text.size();) {
      const size_t end = std::min(text.find('\n', at), text.size());
      const std::string_view line = text.substr(at, end - at);
      if (line.starts_with(key) && line.size() > key.size() && line[key.size()] == '=') {
        return line.substr(key.size() + 1);
      }
      at = end + 1;
    }
    return "(absent)";
  };
  for (std::string_view side : {saved, here}) {
    for (size_t at = 0; at < side.size();) {
      const size_t end = std::min(side.find('\n', at), side.size());
      const std::string_view line = side.substr(at, end - at);
      const std::string_view key = line.substr(0, line.find('='));
      const std::string_view a = value_of(saved, key);
      const std::string_view b = value_of(here, key);
      if (a != b) {
        return std::string("metadata '") + std::string(key) + "' is " + std::string(a) + " there and " +
               std::string(b) + " here";
      }
      at = end + 1;
    }
  }
  return "the program's weights or graph differ (their checksums do)";
}

}  // namespace

Status save_session_file(const LlmSession& session, const ProgramFile& program, const std::string& path) {
  STATICLM_ASSIGN_OR_RETURN(const std::vector<uint8_t> caches, session.cache_contents());
  const std::span<const int32_t> tokens = session.cached_tokens();
  const std::string metadata = metadata_text(program);
  std::vector<uint8_t> out;
  out.reserve(kHeaderBytes + metadata.size() + tokens.size_bytes() + caches.size() + 8);
  out.insert(out.end(), kMagic.begin(), kMagic.end());
  put<uint32_t>(out, kVersion);
  put<uint64_t>(out, segment_checksum(program.flatbuffer_bytes()));
  put<uint64_t>(out, metadata.size());
  put<uint64_t>(out, tokens.size());
  put<uint64_t>(out, caches.size());
  out.insert(out.end(), metadata.begin(), metadata.end());
  for (int32_t token : tokens) {
    put<int32_t>(out, token);
  }
  out.insert(out.end(), caches.begin(), caches.end());
  put<uint64_t>(out, segment_checksum(out));

  const std::string temporary = path + ".partial";
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  if (file == nullptr) {
    return unavailable("session file '", path, "': cannot write '", temporary, "': ", std::strerror(errno));
  }
  const bool written = std::fwrite(out.data(), 1, out.size(), file) == out.size();
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed || std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(temporary.c_str());
    return unavailable("session file '", path, "': cannot write it: ", std::strerror(error));
  }
  return ok_status();
}

Status restore_session_file(LlmSession& session, const ProgramFile& program, const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 && errno == ENOENT) {
    return not_found("session file '", path, "' does not exist");
  }
  STATICLM_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
  const std::span<const uint8_t> bytes = mapped.bytes();
  auto damaged = [&](std::string_view what) {
    return data_loss("session file '", path, "': ", what, " (", bytes.size(), " bytes); delete it to make it again");
  };
  if (bytes.size() < kHeaderBytes + 8 || std::string_view(reinterpret_cast<const char*>(bytes.data()), 16) != kMagic) {
    return damaged("not a staticlm session file");
  }
  if (const auto version = get<uint32_t>(bytes, 16); version != kVersion) {
    return invalid_argument("session file '", path, "': version ", version, "; this build reads version ", kVersion);
  }
  const auto program_checksum = get<uint64_t>(bytes, 20);
  const auto metadata_bytes = get<uint64_t>(bytes, 28);
  const auto token_count = get<uint64_t>(bytes, 36);
  const auto cache_bytes = get<uint64_t>(bytes, 44);
  // Each size is checked against what is left, so their sum cannot overflow.
  uint64_t left = bytes.size() - kHeaderBytes - 8;
  if (metadata_bytes > left || token_count > (left - metadata_bytes) / 4 ||
      cache_bytes != left - metadata_bytes - token_count * 4) {
    return damaged("truncated, or its sizes do not add up");
  }
  const std::span<const uint8_t> body = bytes.first(bytes.size() - 8);
  if (segment_checksum(body) != get<uint64_t>(bytes, body.size())) {
    return damaged("its checksum does not match its contents");
  }
  const std::string_view saved_metadata(reinterpret_cast<const char*>(bytes.data() + kHeaderBytes), metadata_bytes);
  if (program_checksum != segment_checksum(program.flatbuffer_bytes())) {
    return invalid_argument("session file '", path, "' was saved with another program: ",
                            first_difference(saved_metadata, metadata_text(program)));
  }
  std::vector<int32_t> tokens(token_count);
  std::memcpy(tokens.data(), bytes.data() + kHeaderBytes + metadata_bytes, token_count * 4);
  const std::span<const uint8_t> caches = bytes.subspan(kHeaderBytes + metadata_bytes + token_count * 4, cache_bytes);
  Status restored = session.restore_cache(tokens, caches);
  if (!restored.ok()) {
    return restored.with_context(str_cat("session file '", path, "'"));
  }
  return ok_status();
}

}  // namespace staticlm
