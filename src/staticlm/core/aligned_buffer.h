// SPDX-License-Identifier: Apache-2.0
// AlignedBuffer: an owned, aligned, heap allocation. Move-only; frees on destruction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "staticlm/core/result.h"

namespace staticlm {

inline constexpr size_t kDefaultAlignment = 64;
// The huge-page size of x86-64 and most Arm kernels: a buffer streamed end to end wants it.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

enum class PageHint {
  kDefault,
  // Aligned to kHugePageBytes and marked for transparent huge pages before it is first touched
  // (with THP in "madvise" mode a plain allocation gets 4 KiB pages, and streaming it pays a TLB
  // miss every 4 KiB). A hint: where the kernel declines, the buffer still works.
  kHuge,
};

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& other) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  // Allocates `bytes` (zero-filled) aligned to `alignment` (a power of two >= sizeof(void*)).
  // Fails with InvalidArgument for a bad alignment, ResourceExhausted when memory runs out.
  static Result<AlignedBuffer> allocate(size_t bytes, size_t alignment = kDefaultAlignment,
                                        PageHint hint = PageHint::kDefault);

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<uint8_t> span() { return {data_, size_}; }
  std::span<const uint8_t> span() const { return {data_, size_}; }

 private:
  AlignedBuffer(uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace staticlm
