// SPDX-License-Identifier: Apache-2.0
// Tensors: contiguous, row-major, static shapes.
// TensorView borrows both its data and its shape (the shape is owned by whoever described the
// tensor: a Tensor, a program's value table). Tensor owns both.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "staticlm/core/aligned_buffer.h"
#include "staticlm/core/dtype.h"
#include "staticlm/core/result.h"

namespace staticlm {

using Shape = std::vector<int64_t>;

// Element count of a shape already known to be valid (non-negative, no overflow).
inline int64_t num_elements(std::span<const int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    count *= dim;
  }
  return count;
}

struct TensorSpec {
  DType dtype = DType::kF32;
  Shape shape;
  bool operator==(const TensorSpec&) const = default;
};

class TensorView {
 public:
  TensorView() = default;
  TensorView(void* data, DType dtype, std::span<const int64_t> shape) : data_(data), dtype_(dtype), shape_(shape) {}

  void* raw() const { return data_; }
  template <typename T>
  T* data() const {
    return static_cast<T*>(data_);
  }
  DType dtype() const { return dtype_; }
  std::span<const int64_t> shape() const { return shape_; }
  int64_t dim(size_t axis) const { return shape_[axis]; }
  size_t rank() const { return shape_.size(); }
  int64_t numel() const { return num_elements(shape_); }
  // Byte size; valid for views of validated tensors.
  uint64_t nbytes() const;
  void set_data(void* data) { data_ = data; }

 private:
  void* data_ = nullptr;
  DType dtype_ = DType::kF32;
  std::span<const int64_t> shape_;
};

class Tensor {
 public:
  Tensor() = default;
  // Allocates a zero-filled tensor. Fails on an invalid shape or when memory runs out.
  static Result<Tensor> zeros(DType dtype, Shape shape);

  TensorView view() { return TensorView(buffer_.data(), dtype_, shape_); }
  TensorView view() const { return TensorView(const_cast<uint8_t*>(buffer_.data()), dtype_, shape_); }
  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(buffer_.data());
  }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(buffer_.data());
  }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return num_elements(shape_); }
  uint64_t nbytes() const { return buffer_.size(); }
  std::span<uint8_t> bytes() { return buffer_.span(); }
  std::span<const uint8_t> bytes() const { return buffer_.span(); }

 private:
  DType dtype_ = DType::kF32;
  Shape shape_;
  AlignedBuffer buffer_;
};

}  // namespace staticlm
