// SPDX-License-Identifier: Apache-2.0
#include "staticlm/llm/io_manager.h"

#include <algorithm>
#include <utility>

#include "staticlm/core/logging.h"

namespace staticlm {

IOManager::IOManager(std::shared_ptr<IOBufferAllocator> allocator, IoManagerOptions options)
    : allocator_(std::move(allocator)),
      fallback_(options.fallback ? options.fallback : std::make_shared<HeapAllocator>()),
      options_(std::move(options)) {}

IOManager::~IOManager() {
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
    it->owner->free(it->pointer);
  }
}

void IOManager::count(const IOBufferAllocator& allocator, uint64_t bytes) {
  const std::string name(allocator.name());
  auto it = std::find_if(stats_.per_allocator.begin(), stats_.per_allocator.end(),
                         [&](const AllocatorUsage& usage) { return usage.allocator == name; });
  if (it == stats_.per_allocator.end()) {
    stats_.per_allocator.push_back({name, 0, 0});
    it = std::prev(stats_.per_allocator.end());
  }
  ++it->buffers;
  it->bytes += bytes;
}

Result<ExternalBuffer> IOManager::allocate(const IoTensorRef& tensor) {
  IOBufferAllocator* owner = allocator_.get();
  void* pointer = owner->allocate(tensor.bytes, options_.alignment);
  if (pointer == nullptr && owner != fallback_.get()) {
    if (options_.strict) {
      return failed_precondition("allocator '", owner->name(), "' could not allocate ", tensor.bytes, " bytes for ",
                                 io_role_name(tensor.role), " '", tensor.name, "' of method '", tensor.method,
                                 "', and strict I/O forbids the heap fallback");
    }
    if (!warned_) {
      log_warning("allocator '", owner->name(), "' could not allocate ", tensor.bytes, " bytes for ",
                  io_role_name(tensor.role), " '", tensor.name, "'; falling back to '", fallback_->name(),
                  "' (further fallbacks are counted in the run stats)");
      warned_ = true;
    }
    ++stats_.fallbacks;
    stats_.fallback_bytes += tensor.bytes;
    owner = fallback_.get();
    pointer = owner->allocate(tensor.bytes, options_.alignment);
  }
  if (pointer == nullptr) {
    return resource_exhausted("cannot allocate ", tensor.bytes, " bytes for ", io_role_name(tensor.role), " '",
                              tensor.name, "' of method '", tensor.method, "': allocator '", owner->name(),
                              "' returned nothing");
  }
  blocks_.push_back({pointer, tensor.bytes, owner});
  count(*owner, tensor.bytes);
  if (tensor.role == IoRole::kCache) {
    stats_.cache_bytes += tensor.bytes;
  }
  Status bound = owner->bind(pointer, tensor);
  if (!bound.ok()) {
    return bound.with_context(str_cat("allocator '", owner->name(), "' binding ", io_role_name(tensor.role), " '",
                                      tensor.name, "' of method '", tensor.method, "'"));
  }
  ++stats_.bindings;
  return owner->describe(pointer, tensor.bytes);
}

Status IOManager::bind_shared(const ExternalBuffer& shared, const IoTensorRef& tensor) {
  void* buffer = shared.data;
  auto it = std::find_if(blocks_.begin(), blocks_.end(), [&](const Block& block) { return block.pointer == buffer; });
  if (it == blocks_.end()) {
    return invalid_argument("bind_shared: buffer for '", tensor.name, "' was not allocated by this IOManager");
  }
  if (it->bytes != tensor.bytes) {
    return invalid_argument("bind_shared: '", tensor.name, "' of method '", tensor.method, "' needs ", tensor.bytes,
                            " bytes, the shared buffer has ", it->bytes);
  }
  Status bound = it->owner->bind(buffer, tensor);
  if (!bound.ok()) {
    return bound.with_context(str_cat("allocator '", it->owner->name(), "' binding '", tensor.name, "'"));
  }
  ++stats_.bindings;
  return ok_status();
}

}  // namespace staticlm
