// SPDX-License-Identifier: Apache-2.0
// The checksum a program file records for each data segment (format 1.2): XXH3-64 (Debian's
// libxxhash) of the segment's bytes as they lie in the file, padding included. Fast enough to check
// a whole file at read bandwidth, so `--verify` costs about one more read of the weights.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

namespace staticlm {

inline constexpr std::string_view kSegmentChecksumKind = "xxh3-64";

// A checksum computed over bytes fed in pieces.
class SegmentHasher {
 public:
  SegmentHasher();
  ~SegmentHasher();
  SegmentHasher(const SegmentHasher&) = delete;
  SegmentHasher& operator=(const SegmentHasher&) = delete;

  void reset();
  void update(std::span<const uint8_t> bytes);
  uint64_t digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

uint64_t segment_checksum(std::span<const uint8_t> bytes);

}  // namespace staticlm
