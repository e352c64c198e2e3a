// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/shm/shared_memory_allocator.h"

#include <iterator>
#include <optional>
#include <utility>

#include "staticlm/core/checked_math.h"
#include "staticlm/core/logging.h"

namespace staticlm {
namespace {

uintptr_t address(const void* pointer) {
  return reinterpret_cast<uintptr_t>(pointer);
}

}  // namespace

std::string_view shared_memory_kind_name(SharedMemoryKind kind) {
  switch (kind) {
    case SharedMemoryKind::kMemfd: return "memfd";
    case SharedMemoryKind::kDmaBuf: return "dma-buf";
    case SharedMemoryKind::kRpcmem: return "rpcmem";
  }
  return "memfd";
}

std::map<uintptr_t, SharedMemoryAllocator::Entry>::const_iterator SharedMemoryAllocator::find_holding(
    const void* pointer) const {
  if (pointer == nullptr || blocks_.empty()) {
    return blocks_.end();
  }
  auto it = blocks_.upper_bound(address(pointer));
  if (it == blocks_.begin()) {
    return blocks_.end();
  }
  --it;
  const uint64_t into = address(pointer) - it->first;
  return into < it->second.block.block_size ? it : blocks_.end();
}

Status SharedMemoryAllocator::adopt(const Block& block) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uintptr_t start = address(block.block);
  auto end = checked_add(start, block.block_size);
  if (!end || block.block_size == 0) {
    return internal_error("allocator '", name(), "': block at ", block.block, " of ", block.block_size,
                          " bytes wraps the address space");
  }
  auto next = blocks_.lower_bound(start);
  const bool overlaps_next = next != blocks_.end() && next->first < *end;
  const bool overlaps_previous =
      next != blocks_.begin() && std::prev(next)->first + std::prev(next)->second.block.block_size > start;
  if (overlaps_next || overlaps_previous) {
    return internal_error("allocator '", name(), "': block at ", block.block, " of ", block.block_size,
                          " bytes overlaps a live block");
  }
  blocks_.emplace(start, Entry{block, {}});
  ++allocations_;
  if (block.kind == SharedMemoryKind::kDmaBuf) {
    ++dma_buf_allocations_;
  }
  return ok_status();
}

void SharedMemoryAllocator::count_failed_allocation(std::string_view reason) {
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    first = failed_allocations_ == 0;
    ++failed_allocations_;
  }
  if (first) {
    log_warning("allocator '", name(), "': ", reason, " (further failures are logged at info level)");
  } else {
    log_info("allocator '", name(), "': ", reason);
  }
}

void SharedMemoryAllocator::count_refused_allocation() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++failed_allocations_;
}

Status SharedMemoryAllocator::bind(void* pointer, const IoTensorRef& tensor) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = find_holding(pointer);
  if (it == blocks_.end()) {
    return invalid_argument("allocator '", name(), "': cannot bind ", io_role_name(tensor.role), " '", tensor.name,
                            "' of method '", tensor.method, "': pointer ", pointer,
                            " lies in no live block of this allocator");
  }
  const Block& block = it->second.block;
  const uint64_t into = address(pointer) - it->first;
  const uint64_t room = block.block_size - into;
  if (tensor.bytes > room) {
    return out_of_range("allocator '", name(), "': ", io_role_name(tensor.role), " '", tensor.name, "' of method '",
                        tensor.method, "' needs ", tensor.bytes, " bytes, but only ", room,
                        " bytes of its block remain after ", pointer);
  }
  SharedBinding binding;
  binding.method = std::string(tensor.method);
  binding.name = std::string(tensor.name);
  binding.role = tensor.role;
  binding.bytes = tensor.bytes;
  binding.pointer = pointer;
  binding.fd = block.fd;
  binding.kind = block.kind;
  binding.offset = block.block_offset + into;
  // The map's value is only const through the const_iterator find_holding returns.
  blocks_.at(it->first).bindings.emplace_back(next_binding_++, std::move(binding));
  return ok_status();
}

void SharedMemoryAllocator::free(void* pointer) {
  if (pointer == nullptr) {
    return;
  }
  std::optional<Block> released;
  std::string refusal;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto exact = blocks_.find(address(pointer));
    if (exact != blocks_.end()) {
      released = exact->second.block;
      blocks_.erase(exact);
    } else {
      ++refused_frees_;
      auto holding = find_holding(pointer);
      refusal = holding == blocks_.end()
                    ? str_cat("pointer ", pointer, " is not a live block (a double free or a foreign pointer)")
                    : str_cat("pointer ", pointer, " lies ", address(pointer) - holding->first,
                              " bytes inside the block at ", holding->second.block.block, ", not at its start");
    }
  }
  if (!released) {
    // Logged outside the lock: a sink may call back into the allocator.
    log_warning("allocator '", name(), "': free refused: ", refusal, "; ignored");
    return;
  }
  release(*released);
}

void SharedMemoryAllocator::release_all() {
  std::map<uintptr_t, Entry> remaining;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    remaining.swap(blocks_);
  }
  if (remaining.empty()) {
    return;
  }
  log_warning("allocator '", name(), "' destroyed with ", remaining.size(), " block(s) never freed; releasing them");
  for (const auto& [start, entry] : remaining) {
    release(entry.block);
  }
}

Result<SharedBlockInfo> SharedMemoryAllocator::lookup(const void* pointer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = find_holding(pointer);
  if (it == blocks_.end()) {
    return not_found("allocator '", name(), "': pointer ", pointer, " lies in no live block");
  }
  const Block& block = it->second.block;
  const uint64_t into = address(pointer) - it->first;
  SharedBlockInfo info;
  info.fd = block.fd;
  info.kind = block.kind;
  info.offset = block.block_offset + into;
  info.size = block.block_size - into;
  info.block = block.block;
  info.block_offset = block.block_offset;
  info.block_size = block.block_size;
  info.mapping_size = block.mapping_size;
  return info;
}

ExternalBuffer SharedMemoryAllocator::describe(void* pointer, uint64_t bytes) const {
  auto info = lookup(pointer);
  ExternalBuffer buffer = ExternalBuffer::host(pointer, bytes, std::string(name()));
  if (!info.ok()) {
    return buffer;
  }
  switch (info->kind) {
    case SharedMemoryKind::kMemfd: buffer.type = ExternalBufferType::kMemfd; break;
    case SharedMemoryKind::kDmaBuf: buffer.type = ExternalBufferType::kDmaBuf; break;
    case SharedMemoryKind::kRpcmem: buffer.type = ExternalBufferType::kRpcmem; break;
  }
  buffer.fd = info->fd;
  buffer.offset = info->offset;
  return buffer;
}

std::vector<SharedBinding> SharedMemoryAllocator::bindings() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<SharedBinding> out;
  for (const auto& [start, entry] : blocks_) {
    for (const auto& [sequence, binding] : entry.bindings) {
      out.push_back(binding);
    }
  }
  return out;
}

Result<SharedBinding> SharedMemoryAllocator::binding(std::string_view method, std::string_view name_of_tensor) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const SharedBinding* latest = nullptr;
  uint64_t latest_sequence = 0;
  for (const auto& [start, entry] : blocks_) {
    for (const auto& [sequence, binding] : entry.bindings) {
      if (binding.method == method && binding.name == name_of_tensor &&
          (latest == nullptr || sequence > latest_sequence)) {
        latest = &binding;
        latest_sequence = sequence;
      }
    }
  }
  if (latest != nullptr) {
    return *latest;
  }
  return not_found("allocator '", name(), "': no live block is bound to tensor '", name_of_tensor, "' of method '",
                   method, "'");
}

SharedMemoryStats SharedMemoryAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  SharedMemoryStats out;
  out.live_blocks = blocks_.size();
  for (const auto& [start, entry] : blocks_) {
    out.live_bytes += entry.block.block_size;
    out.mapped_bytes += entry.block.mapping_size;
    out.bindings += entry.bindings.size();
  }
  out.allocations = allocations_;
  out.failed_allocations = failed_allocations_;
  out.dma_buf_allocations = dma_buf_allocations_;
  out.refused_frees = refused_frees_;
  return out;
}

}  // namespace staticlm
