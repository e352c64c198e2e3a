// SPDX-License-Identifier: Apache-2.0
#include "staticlm/runtime/external_buffer.h"

#include <utility>

namespace staticlm {

std::string_view external_buffer_type_name(ExternalBufferType type) {
  switch (type) {
    case ExternalBufferType::kHostAllocation: return "host";
    case ExternalBufferType::kMemfd: return "memfd";
    case ExternalBufferType::kDmaBuf: return "dma-buf";
    case ExternalBufferType::kRpcmem: return "rpcmem";
  }
  return "host";
}

ExternalBuffer ExternalBuffer::host(void* data, uint64_t size, std::string allocator) {
  ExternalBuffer buffer;
  buffer.data = data;
  buffer.size = size;
  buffer.allocator = std::move(allocator);
  return buffer;
}

}  // namespace staticlm
