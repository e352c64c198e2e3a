// SPDX-License-Identifier: Apache-2.0
// The fixed header at byte 0 of every program file (little-endian). See docs/format.md.
#pragma once

#include <cstdint>

namespace staticlm {

inline constexpr char kProgramMagic[4] = {'S', 'L', 'M', 'P'};
inline constexpr uint16_t kFormatMajorVersion = 1;
inline constexpr uint16_t kFormatMinorVersion = 2;  // 1.2: segment checksums
inline constexpr uint32_t kFileHeaderSize = 48;
// Alignment of the data area and of large constant segments: one page, so they map zero-copy.
inline constexpr uint64_t kPageAlignment = 4096;
// Alignment of every other segment (and of constants packed into a shared segment).
inline constexpr uint64_t kSegmentAlignment = 64;
// Constants at least this large get a page-aligned segment of their own.
inline constexpr uint64_t kLargeConstantBytes = 16 * 1024;

struct FileHeader {
  char magic[4];
  uint16_t major_version;
  uint16_t minor_version;
  uint32_t header_size;  // kFileHeaderSize for this version; a reader skips what it does not know
  uint32_t reserved;
  uint64_t flatbuffer_offset;
  uint64_t flatbuffer_size;
  uint64_t data_offset;  // page-aligned start of the data area
  uint64_t data_size;
};
static_assert(sizeof(FileHeader) == kFileHeaderSize);

}  // namespace staticlm
