// SPDX-License-Identifier: Apache-2.0
#include "staticlm/format/segment_checksum.h"

#include <xxhash.h>

#include <new>

namespace staticlm {

struct SegmentHasher::State {
  State() : xxh3(XXH3_createState()) {
    if (xxh3 == nullptr) {
      throw std::bad_alloc();  // a few hundred bytes: out of memory everywhere, as for any new
    }
  }
  ~State() { XXH3_freeState(xxh3); }
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  XXH3_state_t* xxh3;
};

SegmentHasher::SegmentHasher() : state_(std::make_unique<State>()) {
  reset();
}
SegmentHasher::~SegmentHasher() = default;

void SegmentHasher::reset() {
  XXH3_64bits_reset(state_->xxh3);
}

void SegmentHasher::update(std::span<const uint8_t> bytes) {
  XXH3_64bits_update(state_->xxh3, bytes.data(), bytes.size());
}

uint64_t SegmentHasher::digest() const {
  return XXH3_64bits_digest(state_->xxh3);
}

uint64_t segment_checksum(std::span<const uint8_t> bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

}  // namespace staticlm
