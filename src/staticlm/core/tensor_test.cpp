// SPDX-License-Identifier: Apache-2.0
#include "staticlm/core/tensor.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/core/aligned_buffer.h"

namespace staticlm {
namespace {

using ::testing::IsSubstring;

bool is_aligned(const void* pointer, uintptr_t alignment) {
  return reinterpret_cast<uintptr_t>(pointer) % alignment == 0;
}

bool all_zero(std::span<const uint8_t> bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](uint8_t byte) { return byte == 0; });
}

// --- AlignedBuffer ---

TEST(AlignedBufferTest, AllocatesZeroFilledAligned) {
  for (size_t alignment : {size_t{8}, size_t{64}, size_t{128}, size_t{4096}}) {
    for (size_t bytes : {size_t{1}, size_t{63}, size_t{64}, size_t{1000}, size_t{100000}}) {
      Result<AlignedBuffer> buffer = AlignedBuffer::allocate(bytes, alignment);
      ASSERT_TRUE(buffer.ok()) << buffer.status().to_string();
      EXPECT_EQ(buffer->size(), bytes);
      ASSERT_NE(buffer->data(), nullptr);
      EXPECT_TRUE(is_aligned(buffer->data(), alignment)) << "alignment " << alignment;
      EXPECT_TRUE(all_zero(buffer->span()));
      EXPECT_EQ(buffer->span().size(), bytes);
      // The whole range is writable (ASan would flag a short allocation).
      std::memset(buffer->data(), 0xab, bytes);
    }
  }
}

TEST(AlignedBufferTest, DefaultAlignmentIs64) {
  EXPECT_EQ(kDefaultAlignment, 64u);
  Result<AlignedBuffer> buffer = AlignedBuffer::allocate(10);
  ASSERT_TRUE(buffer.ok());
  EXPECT_TRUE(is_aligned(buffer->data(), 64));
}

TEST(AlignedBufferTest, HugePageHintAlignsToHugePages) {
  for (size_t bytes : {size_t{1}, kHugePageBytes + 1, 3 * kHugePageBytes}) {
    Result<AlignedBuffer> buffer = AlignedBuffer::allocate(bytes, kDefaultAlignment, PageHint::kHuge);
    ASSERT_TRUE(buffer.ok()) << buffer.status().to_string();
    EXPECT_EQ(buffer->size(), bytes);
    EXPECT_TRUE(is_aligned(buffer->data(), kHugePageBytes));
    EXPECT_TRUE(all_zero(buffer->span()));
    std::memset(buffer->data(), 0xab, bytes);
  }
}

TEST(AlignedBufferTest, ZeroBytesIsEmpty) {
  Result<AlignedBuffer> buffer = AlignedBuffer::allocate(0);
  ASSERT_TRUE(buffer.ok());
  EXPECT_EQ(buffer->size(), 0u);
  EXPECT_TRUE(buffer->span().empty());
}

TEST(AlignedBufferTest, BadAlignmentRefused) {
  for (size_t alignment : {size_t{0}, size_t{3}, size_t{4}, size_t{48}, size_t{100}}) {
    Result<AlignedBuffer> buffer = AlignedBuffer::allocate(16, alignment);
    ASSERT_FALSE(buffer.ok()) << alignment;
    EXPECT_EQ(buffer.status().code(), StatusCode::kInvalidArgument);
    EXPECT_PRED_FORMAT2(IsSubstring, "alignment " + std::to_string(alignment) + " is not a power of two",
                        buffer.status().message());
  }
}

TEST(AlignedBufferTest, OverflowingSizeIsResourceExhausted) {
  Result<AlignedBuffer> buffer = AlignedBuffer::allocate(std::numeric_limits<size_t>::max());
  ASSERT_FALSE(buffer.ok());
  EXPECT_EQ(buffer.status().code(), StatusCode::kResourceExhausted);
  EXPECT_PRED_FORMAT2(IsSubstring, "overflows", buffer.status().message());
}

TEST(AlignedBufferTest, MoveTransfersOwnership) {
  Result<AlignedBuffer> allocated = AlignedBuffer::allocate(256);
  ASSERT_TRUE(allocated.ok());
  AlignedBuffer first = std::move(allocated).value();
  uint8_t* memory = first.data();
  first.data()[5] = 7;

  AlignedBuffer second(std::move(first));
  EXPECT_EQ(second.data(), memory);
  EXPECT_EQ(second.size(), 256u);
  EXPECT_EQ(second.data()[5], 7);
  // NOLINTNEXTLINE(bugprone-use-after-move)
  EXPECT_EQ(first.data(), nullptr);

  Result<AlignedBuffer> other = AlignedBuffer::allocate(32);
  ASSERT_TRUE(other.ok());
  AlignedBuffer third = std::move(other).value();
  third = std::move(second);  // frees third's old block (ASan checks the leak)
  EXPECT_EQ(third.data(), memory);
  EXPECT_EQ(third.size(), 256u);
  // NOLINTNEXTLINE(bugprone-use-after-move)
  EXPECT_EQ(second.size(), 0u);
}

// --- Tensor ---

TEST(TensorTest, ZerosAllocatesZeroFilledAligned) {
  Result<Tensor> tensor = Tensor::zeros(DType::kF32, {2, 3, 5});
  ASSERT_TRUE(tensor.ok()) << tensor.status().to_string();
  EXPECT_EQ(tensor->dtype(), DType::kF32);
  EXPECT_EQ(tensor->shape(), (Shape{2, 3, 5}));
  EXPECT_EQ(tensor->numel(), 30);
  EXPECT_EQ(tensor->nbytes(), 30u * 4);
  EXPECT_EQ(tensor->bytes().size(), 30u * 4);
  EXPECT_TRUE(is_aligned(tensor->data<float>(), 64));
  EXPECT_TRUE(all_zero(tensor->bytes()));
  for (int i = 0; i < 30; ++i) {
    EXPECT_EQ(tensor->data<float>()[i], 0.0f);
  }
}

TEST(TensorTest, ZerosSizesFollowDtype) {
  Result<Tensor> halves = Tensor::zeros(DType::kF16, {7});
  ASSERT_TRUE(halves.ok());
  EXPECT_EQ(halves->nbytes(), 14u);
  Result<Tensor> longs = Tensor::zeros(DType::kI64, {3, 3});
  ASSERT_TRUE(longs.ok());
  EXPECT_EQ(longs->nbytes(), 72u);
  Result<Tensor> blocks = Tensor::zeros(DType::kQ8_0, {2, 64});
  ASSERT_TRUE(blocks.ok());
  EXPECT_EQ(blocks->nbytes(), 2u * 68);
  EXPECT_TRUE(all_zero(blocks->bytes()));
}

TEST(TensorTest, ScalarAndEmptyShapes) {
  Result<Tensor> scalar = Tensor::zeros(DType::kI32, {});
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(scalar->numel(), 1);
  EXPECT_EQ(scalar->nbytes(), 4u);
  EXPECT_EQ(scalar->view().rank(), 0u);

  Result<Tensor> empty = Tensor::zeros(DType::kF32, {4, 0});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->numel(), 0);
  EXPECT_EQ(empty->nbytes(), 0u);
  EXPECT_EQ(empty->shape(), (Shape{4, 0}));
}

TEST(TensorTest, InvalidShapeRefused) {
  Result<Tensor> negative = Tensor::zeros(DType::kF32, {2, -3});
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.status().code(), StatusCode::kInvalidArgument);
  EXPECT_PRED_FORMAT2(IsSubstring, "[2,-3]", negative.status().message());
  EXPECT_PRED_FORMAT2(IsSubstring, "negative dimension", negative.status().message());

  const int64_t big = int64_t{1} << 40;
  Result<Tensor> overflow = Tensor::zeros(DType::kU8, {big, big});
  ASSERT_FALSE(overflow.ok());
  EXPECT_EQ(overflow.status().code(), StatusCode::kOutOfRange);

  Result<Tensor> partial_block = Tensor::zeros(DType::kQ4_0, {3, 10});
  ASSERT_FALSE(partial_block.ok());
  EXPECT_EQ(partial_block.status().code(), StatusCode::kInvalidArgument);
  EXPECT_PRED_FORMAT2(IsSubstring, "30 elements of q4_0", partial_block.status().message());
}

TEST(TensorTest, ViewSharesDataAndShape) {
  Result<Tensor> allocated = Tensor::zeros(DType::kI32, {4, 6});
  ASSERT_TRUE(allocated.ok());
  Tensor& tensor = *allocated;
  TensorView view = tensor.view();
  EXPECT_EQ(view.raw(), tensor.data<int32_t>());
  EXPECT_EQ(view.dtype(), DType::kI32);
  // The view borrows the tensor's shape storage rather than copying it.
  EXPECT_EQ(view.shape().data(), tensor.shape().data());
  EXPECT_EQ(view.rank(), 2u);
  EXPECT_EQ(view.dim(0), 4);
  EXPECT_EQ(view.dim(1), 6);
  EXPECT_EQ(view.numel(), 24);
  EXPECT_EQ(view.nbytes(), 96u);

  view.data<int32_t>()[23] = 99;  // writes through to the tensor
  EXPECT_EQ(tensor.data<int32_t>()[23], 99);

  const Tensor& const_tensor = tensor;
  TensorView const_view = const_tensor.view();
  EXPECT_EQ(const_view.raw(), view.raw());
  EXPECT_EQ(const_view.shape().data(), tensor.shape().data());
}

TEST(TensorTest, MovedTensorKeepsBuffer) {
  Result<Tensor> allocated = Tensor::zeros(DType::kF32, {8});
  ASSERT_TRUE(allocated.ok());
  allocated->data<float>()[3] = 2.5f;
  const float* memory = allocated->data<float>();
  Tensor moved = std::move(allocated).value();
  EXPECT_EQ(moved.data<float>(), memory);
  EXPECT_EQ(moved.data<float>()[3], 2.5f);
  EXPECT_EQ(moved.shape(), (Shape{8}));
  EXPECT_EQ(moved.view().data<float>(), memory);
}

TEST(TensorViewTest, OverExternalMemory) {
  std::vector<uint16_t> storage(12, 0);
  const std::vector<int64_t> shape = {3, 4};
  TensorView view(storage.data(), DType::kBF16, shape);
  EXPECT_EQ(view.raw(), storage.data());
  EXPECT_EQ(view.shape().data(), shape.data());
  EXPECT_EQ(view.numel(), 12);
  EXPECT_EQ(view.nbytes(), 24u);

  std::vector<uint16_t> other(12, 0);
  view.set_data(other.data());
  EXPECT_EQ(view.data<uint16_t>(), other.data());

  TensorView empty;
  EXPECT_EQ(empty.raw(), nullptr);
  EXPECT_EQ(empty.rank(), 0u);
  EXPECT_EQ(empty.numel(), 1);
}

TEST(TensorSpecTest, Equality) {
  EXPECT_EQ((TensorSpec{DType::kF16, {1, 2}}), (TensorSpec{DType::kF16, {1, 2}}));
  EXPECT_NE((TensorSpec{DType::kF16, {1, 2}}), (TensorSpec{DType::kF32, {1, 2}}));
  EXPECT_NE((TensorSpec{DType::kF16, {1, 2}}), (TensorSpec{DType::kF16, {2, 1}}));
  EXPECT_NE((TensorSpec{DType::kF16, {1, 2}}), (TensorSpec{DType::kF16, {1, 2, 1}}));
}

TEST(NumElementsTest, ProductOfDims) {
  EXPECT_EQ(num_elements(std::vector<int64_t>{}), 1);
  EXPECT_EQ(num_elements(std::vector<int64_t>{2, 3, 7}), 42);
  EXPECT_EQ(num_elements(std::vector<int64_t>{5, 0}), 0);
}

}  // namespace
}  // namespace staticlm
