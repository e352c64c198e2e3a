// SPDX-License-Identifier: Apache-2.0
// Reader for Hugging Face safetensors checkpoints, single-file or sharded.
//
// Every shard is memory-mapped and validated once, at open: the header's length and JSON, each
// tensor's dtype, shape and byte range, and (for sharded checkpoints) the index's shard names and
// tensor placement. Tensors are then zero-copy views into the mappings.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/byte_source.h"
#include "staticlm/core/dtype.h"
#include "staticlm/core/mapped_file.h"
#include "staticlm/core/result.h"
#include "staticlm/core/tensor.h"

namespace staticlm {

// Safetensors header lengths above this are refused (the limit the reference implementation uses).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::kF32;  // F32, F16 or BF16
  Shape shape;
  // The tensor's little-endian data inside the file's mapping, exactly dtype x shape bytes. It is
  // not necessarily aligned to the element size: read it with memcpy.
  std::span<const uint8_t> bytes;
  std::string file;  // path of the file the tensor is in
};

// Validates a safetensors file already in memory and describes its tensors, sorted by name.
// `file` names the file in messages and is copied into each tensor's `file`; the returned views
// point into `file_bytes`. Fails with DataLoss when the file is shorter than its header says, and
// InvalidArgument for a header that is not a JSON object, an entry without a valid "dtype",
// "shape" or "data_offsets", a dtype other than F32/F16/BF16, a byte range that does not match
// the shape or lies outside the data buffer, overlapping ranges, or a duplicate tensor name.
// Gaps between tensors are allowed; "__metadata__" is checked to be a string map and skipped.
Result<std::vector<SafetensorsTensor>> parse_safetensors(std::span<const uint8_t> file_bytes, const std::string& file);

// A checkpoint directory: model.safetensors, or the shards listed by
// model.safetensors.index.json (the index wins when both exist).
//
// Sharded checkpoints: the index's "weight_map" maps tensor names to shard file names, which must
// be plain names inside the directory. Each shard is opened once. Every tensor the index lists must
// be in the shard it names, and no tensor may be in two shards. A tensor present in a shard but not
// listed in the index is still found by find()/get(): the shard's own header is authoritative about
// what it holds, and the index only tells where to look.
//
// Move-only. Pointers from find()/get() and the tensors' byte views stay valid while the checkpoint
// (or the checkpoint it was moved into) lives.
class SafetensorsCheckpoint {
 public:
  // Fails with NotFound when the directory holds neither file or a listed shard is missing,
  // InvalidArgument for a malformed index (not an object, no "weight_map", a non-string or unsafe
  // shard name, a tensor missing from its shard or in two shards), and whatever
  // parse_safetensors or MappedFile::open return for a bad shard.
  static Result<SafetensorsCheckpoint> open(const std::string& model_dir);

  // nullptr when there is no tensor of that name: use it for tensors a model may or may not have.
  const SafetensorsTensor* find(std::string_view name) const;
  // For tensors a model requires: NotFound names the directory, the tensor and, when one is
  // close, the name that was probably meant.
  Result<const SafetensorsTensor*> get(std::string_view name) const;
  // Every tensor name, sorted.
  std::vector<std::string> names() const;
  size_t size() const { return tensors_.size(); }
  const std::string& model_dir() const { return model_dir_; }
  // The mapped files, in the order they were opened.
  const std::vector<MappedFile>& files() const { return files_; }

 private:
  Status add_file(const std::string& path);

  std::string model_dir_;
  std::vector<MappedFile> files_;
  // std::map nodes do not move, so tensor pointers survive moves of the checkpoint.
  std::map<std::string, SafetensorsTensor, std::less<>> tensors_;
};

// A ByteSource yielding `tensor`'s values converted to `target` (F32, F16 or BF16, any direction;
// rounding to nearest even), converted on each read(). A same-dtype source is a plain copy. It
// borrows the tensor's bytes: the checkpoint must outlive the source. Fails with InvalidArgument
// when either dtype is not F32, F16 or BF16, OutOfRange when the converted size overflows.
Result<std::shared_ptr<ByteSource>> converted_source(const SafetensorsTensor& tensor, DType target);

// As converted_source to F32, each value then shifted by `offset` in f32 arithmetic: a norm weight
// that applies as (offset + w) folded into a plain one.
Result<std::shared_ptr<ByteSource>> shifted_f32_source(const SafetensorsTensor& tensor, float offset);

// As converted_source to F32, each value then multiplied by `factor` in f32 arithmetic: a
// multiplier folded into a weight (exactly, where the factor is a power of two).
Result<std::shared_ptr<ByteSource>> scaled_f32_source(const SafetensorsTensor& tensor, float factor);

}  // namespace staticlm
