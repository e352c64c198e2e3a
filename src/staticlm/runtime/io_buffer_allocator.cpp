// SPDX-License-Identifier: Apache-2.0
#include "staticlm/runtime/io_buffer_allocator.h"

#include <cstdlib>
#include <cstring>

#include "staticlm/core/checked_math.h"

namespace staticlm {

std::string_view io_role_name(IoRole role) {
  switch (role) {
    case IoRole::kInput: return "input";
    case IoRole::kOutput: return "output";
    case IoRole::kCache: return "cache";
  }
  return "input";
}

void* HeapAllocator::allocate(size_t bytes, size_t alignment) {
  if (!is_power_of_two(alignment)) {
    return nullptr;
  }
  alignment = alignment < sizeof(void*) ? sizeof(void*) : alignment;
  auto rounded = checked_align_up(bytes == 0 ? 1 : bytes, alignment);
  if (!rounded) {
    return nullptr;
  }
  void* memory = std::aligned_alloc(alignment, *rounded);
  if (memory != nullptr) {
    std::memset(memory, 0, *rounded);
  }
  return memory;
}

Status HeapAllocator::bind(void*, const IoTensorRef&) {
  return ok_status();
}

void HeapAllocator::free(void* pointer) {
  std::free(pointer);
}

}  // namespace staticlm
