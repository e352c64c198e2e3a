// SPDX-License-Identifier: Apache-2.0
// Allocators by name, for `--io-allocator NAME`. The heap allocator is built in; backends add
// theirs (shm, rpcmem, ...) through their register function. The llm layer itself links no
// vendor allocator.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/runtime/io_buffer_allocator.h"

namespace staticlm {

using AllocatorFactory = std::function<Result<std::shared_ptr<IOBufferAllocator>>()>;

class AllocatorRegistry {
 public:
  // A registry holding the built-in "heap" allocator.
  AllocatorRegistry();
  // Fails with InvalidArgument when `name` is taken.
  Status add(std::string name, std::string description, AllocatorFactory factory);
  // Creates the allocator called `name`. NotFound lists the registered names.
  Result<std::shared_ptr<IOBufferAllocator>> create(std::string_view name) const;
  std::vector<std::pair<std::string, std::string>> list() const;  // name, description
  bool has(std::string_view name) const { return entries_.count(name) != 0; }

 private:
  struct Entry {
    std::string description;
    AllocatorFactory factory;
  };
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace staticlm
