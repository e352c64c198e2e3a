// SPDX-License-Identifier: Apache-2.0
// SharedMemoryAllocator: the part every fd-backed I/O allocator (shm, rpcmem) shares. It keeps
// one record per live block (the raw base the memory came from, the aligned pointer handed out,
// the fd, the aligned pointer's offset within the fd, the size) and the tensors bound to each
// block, answers "which fd and offset is this pointer?" for any byte inside a block, and refuses
// double frees and foreign pointers without crashing.
//
// A backend that registers I/O memory with its device (QNN's QnnMem_register, a dma-buf import)
// gets each buffer's identity from describe(): the runtime passes it to the delegate with every
// bound tensor (DelegateInstance::bind_buffer), so the backend needs no allocator of its own.
// lookup() and binding() answer the same question for any byte of a block. A pointer the
// IOManager took from the heap fallback is host memory: the backend then copies instead of
// registering.
//
// Thread-safe: every public method may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/runtime/io_buffer_allocator.h"

namespace staticlm {

// What kind of object a block's fd is (what a backend may import it as).
enum class SharedMemoryKind : uint8_t {
  kMemfd,   // memfd_create: any process can mmap it
  kDmaBuf,  // /dev/dma_heap/system: a dma-buf devices can import
  kRpcmem,  // Qualcomm rpcmem (an ION / dma-buf the DSP can map)
};

std::string_view shared_memory_kind_name(SharedMemoryKind kind);

// Where a pointer lives. `fd` is owned by the allocator and stays valid until the block is
// freed; dup() it to keep it longer.
struct SharedBlockInfo {
  int fd = -1;
  SharedMemoryKind kind = SharedMemoryKind::kMemfd;
  uint64_t offset = 0;        // offset of the queried pointer within the fd
  uint64_t size = 0;          // bytes from the queried pointer to the end of its block
  void* block = nullptr;      // the aligned pointer allocate() returned
  uint64_t block_offset = 0;  // offset of `block` within the fd
  uint64_t block_size = 0;    // usable bytes at `block` (the size that was requested)
  uint64_t mapping_size = 0;  // bytes of the fd mapped, alignment padding included
};

// One bind() call: a tensor and the memory that backs it, as a backend registers it.
struct SharedBinding {
  std::string method;
  std::string name;
  IoRole role = IoRole::kInput;
  uint64_t bytes = 0;  // the tensor's size
  void* pointer = nullptr;
  int fd = -1;
  SharedMemoryKind kind = SharedMemoryKind::kMemfd;
  uint64_t offset = 0;  // offset of `pointer` within the fd
};

struct SharedMemoryStats {
  uint64_t live_blocks = 0;
  uint64_t live_bytes = 0;           // usable bytes of the live blocks
  uint64_t mapped_bytes = 0;         // bytes mapped for them, alignment padding included
  uint64_t allocations = 0;          // allocate() calls that returned memory, so far
  uint64_t failed_allocations = 0;   // allocate() calls that returned nullptr, so far
  uint64_t dma_buf_allocations = 0;  // of `allocations`, those served by a DMA heap
  uint64_t refused_frees = 0;        // free() calls refused (double free, foreign pointer)
  uint64_t bindings = 0;             // bindings of the live blocks
};

class SharedMemoryAllocator : public IOBufferAllocator {
 public:
  ~SharedMemoryAllocator() override = default;

  // Records that `tensor` is backed by memory starting at `pointer`. Fails with InvalidArgument
  // when `pointer` lies in no live block of this allocator, OutOfRange when the tensor's bytes
  // run past the end of the block.
  Status bind(void* pointer, const IoTensorRef& tensor) final;
  // Releases a block allocate() returned. A pointer that is not the start of a live block
  // (a double free, a foreign or interior pointer) is refused: logged as a warning, counted in
  // stats().refused_frees, and otherwise ignored. nullptr is ignored silently.
  void free(void* pointer) final;
  // The fd, offset and kind of the block holding `pointer` (ExternalBuffer type memfd, dma-buf or
  // rpcmem); a pointer of no live block is described as plain host memory.
  ExternalBuffer describe(void* pointer, uint64_t bytes) const final;

  // The fd, offset and size of the block holding `pointer` (the start or any byte inside).
  // Fails with NotFound when no live block holds it.
  Result<SharedBlockInfo> lookup(const void* pointer) const;
  // Every binding of every live block, in block address order then bind order.
  std::vector<SharedBinding> bindings() const;
  // The most recent binding of tensor `name` of `method` among the live blocks; NotFound when
  // there is none.
  Result<SharedBinding> binding(std::string_view method, std::string_view name) const;
  SharedMemoryStats stats() const;

 protected:
  // What a subclass allocated: `base` and `mapping_size` are what it releases, `block` is the
  // aligned pointer it hands out, at offset `block_offset` within `fd`.
  struct Block {
    void* base = nullptr;
    void* block = nullptr;
    int fd = -1;
    SharedMemoryKind kind = SharedMemoryKind::kMemfd;
    uint64_t block_offset = 0;
    uint64_t block_size = 0;
    uint64_t mapping_size = 0;
  };

  // Records a new block. Fails with Internal when it overlaps a live block (the memory came back
  // twice); the caller then releases it and returns nullptr.
  Status adopt(const Block& block);
  // Counts an allocate() that returns nullptr. The first reason is logged as a warning (the
  // IOManager only knows that it failed), later ones at info level.
  void count_failed_allocation(std::string_view reason);
  // Counts an allocate() that returns nullptr for a reason already logged (an allocator that is
  // unavailable says why once, when it is created).
  void count_refused_allocation();
  // Releases what adopt() recorded (or a block adopt() refused). Called without the lock held.
  virtual void release(const Block& block) = 0;
  // Releases every block still live, with a warning naming how many. Subclasses call it from
  // their destructor, while release() still dispatches to them.
  void release_all();

 private:
  struct Entry {
    Block block;
    std::vector<std::pair<uint64_t, SharedBinding>> bindings;  // bind sequence number, binding
  };
  // The entry whose block holds `pointer`, or end(). Called with mutex_ held.
  std::map<uintptr_t, Entry>::const_iterator find_holding(const void* pointer) const;

  mutable std::mutex mutex_;
  std::map<uintptr_t, Entry> blocks_;  // keyed by the aligned pointer
  uint64_t allocations_ = 0;
  uint64_t failed_allocations_ = 0;
  uint64_t dma_buf_allocations_ = 0;
  uint64_t refused_frees_ = 0;
  uint64_t next_binding_ = 0;
};

}  // namespace staticlm
