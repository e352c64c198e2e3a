// SPDX-License-Identifier: Apache-2.0
// ByteSource: produces a blob of bytes on demand (a constant's data, an embedded file, a
// delegate blob). The program writer reads sources one at a time while streaming a file, so an
// export holds at most one tensor in memory, and a source may convert while it reads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "staticlm/core/status.h"

namespace staticlm {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size_bytes() const = 0;
  // Fills `out`, which is exactly size_bytes() long.
  virtual Status read(std::span<uint8_t> out) const = 0;
};

// A source over bytes it owns.
std::shared_ptr<ByteSource> make_owned_source(std::vector<uint8_t> bytes);
// A source over bytes that someone else (a mapped checkpoint) keeps alive while it is used.
std::shared_ptr<ByteSource> make_borrowed_source(std::span<const uint8_t> bytes);

}  // namespace staticlm
