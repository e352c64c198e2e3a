// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/aligned_buffer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <sys/mman.h>

#include "staticlm/core/checked_math.h"

namespace staticlm {

AlignedBuffer::~AlignedBuffer() {
  std::free(data_);
}

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Result<AlignedBuffer> AlignedBuffer::allocate(size_t bytes, size_t alignment, PageHint hint) {
  if (!is_power_of_two(alignment) || alignment < sizeof(void*)) {
    return invalid_argument("alignment ", alignment, " is not a power of two >= ", sizeof(void*));
  }
  if (bytes == 0) {
    return AlignedBuffer();
  }
  if (hint == PageHint::kHuge) {
    alignment = std::max(alignment, kHugePageBytes);
  }
  auto rounded = checked_align_up(bytes, alignment);
  if (!rounded) {
    return resource_exhausted("cannot allocate ", bytes, " bytes: size overflows");
  }
  void* memory = std::aligned_alloc(alignment, *rounded);
  if (memory == nullptr) {
    return resource_exhausted("out of memory allocating ", bytes, " bytes");
  }
  if (hint == PageHint::kHuge) {
    madvise(memory, *rounded, MADV_HUGEPAGE);  // a hint; failure leaves 4 KiB pages
  }
  std::memset(memory, 0, *rounded);
  return AlignedBuffer(static_cast<uint8_t*>(memory), bytes);
}

}  // namespace staticlm
