// SPDX-License-Identifier: Apache-2.0
// reshape, transpose, slice, concat and cast against references written out element by element,
// and the registration of every op.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "staticlm/backends/portable/kernel_test_util.h"
#include "staticlm/backends/portable/register.h"
#include "staticlm/runtime/kernel_registry.h"

namespace staticlm::portable_test {
namespace {

// A tensor whose element i holds the pattern value i * 7 + 1 in its own dtype's bytes, so
// that layout ops can be checked for any element size.
Tensor pattern_tensor(DType dtype, const Shape& shape) {
  Tensor tensor = new_tensor(dtype, shape);
  const uint32_t size = dtype_info(dtype).block_bytes;
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    const uint64_t value = static_cast<uint64_t>(i) * 7 + 1;
    std::memcpy(tensor.bytes().data() + i * size, &value, size);  // little-endian low bytes
  }
  return tensor;
}

// Element i of a tensor as its raw bytes, zero-extended.
uint64_t element_bits(const Tensor& tensor, int64_t i) {
  const uint32_t size = dtype_info(tensor.dtype()).block_bytes;
  uint64_t value = 0;
  std::memcpy(&value, tensor.bytes().data() + i * size, size);
  return value;
}

std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t axis = shape.size(); axis-- > 0;) {
    index[axis] = flat % shape[axis];
    flat /= shape[axis];
  }
  return index;
}

int64_t ravel(const std::vector<int64_t>& index, const Shape& shape) {
  int64_t flat = 0;
  for (size_t axis = 0; axis < shape.size(); ++axis) {
    flat = flat * shape[axis] + index[axis];
  }
  return flat;
}

TEST(ReshapeTest, KeepsTheBytes) {
  Tensor x = pattern_tensor(DType::kBF16, {2, 3, 4});
  auto outputs = run_op(OpKind::kReshape, {&x}, Attributes{{"shape", std::vector<int64_t>{-1, 4}}});
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
  const Tensor& out = (*outputs)[0];
  EXPECT_EQ(out.shape(), (Shape{6, 4}));
  EXPECT_EQ(out.dtype(), DType::kBF16);
  ASSERT_EQ(out.nbytes(), x.nbytes());
  EXPECT_EQ(std::memcmp(out.bytes().data(), x.bytes().data(), x.nbytes()), 0);
}

// [1, seq, heads, dim] -> [1, seq, hidden] in a left-padded chunk: the padding rows are not
// copied; a reshape whose shapes do not lead with the chunk's rows copies every byte.
TEST(ReshapeTest, LeavesTheChunksPaddingRowsUnwritten) {
  KernelRegistry registry;
  ASSERT_TRUE(register_portable_kernels(registry).ok());
  Tensor x = pattern_tensor(DType::kF32, {1, 5, 2, 3});
  const Attributes attrs{{"shape", std::vector<int64_t>{1, 5, 6}}};
  auto padded = run_op_with(registry, CpuFeatures(), OpKind::kReshape, {&x}, attrs, nullptr, {5, 2, -123.0f});
  ASSERT_TRUE(padded.ok()) << padded.status().to_string();
  const float* got = (*padded)[0].data<float>();
  const float* want = x.data<float>();
  for (int64_t i = 0; i < 30; ++i) {
    EXPECT_EQ(got[i], i < 12 ? -123.0f : want[i]) << "element " << i;
  }
  auto other = run_op_with(registry, CpuFeatures(), OpKind::kReshape, {&x}, attrs, nullptr, {4, 2, -123.0f});
  ASSERT_TRUE(other.ok()) << other.status().to_string();
  EXPECT_EQ(std::memcmp((*other)[0].bytes().data(), x.bytes().data(), x.nbytes()), 0);
}

struct TransposeCase {
  DType dtype;
  Shape shape;
  std::vector<int64_t> perm;
};

class TransposeTest : public ::testing::TestWithParam<TransposeCase> {};

TEST_P(TransposeTest, PermutesAxes) {
  const TransposeCase& c = GetParam();
  Tensor x = pattern_tensor(c.dtype, c.shape);
  auto outputs = run_op(OpKind::kTranspose, {&x}, Attributes{{"perm", c.perm}});
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
  const Tensor& out = (*outputs)[0];
  Shape out_shape;
  for (int64_t axis : c.perm) {
    out_shape.push_back(c.shape[static_cast<size_t>(axis)]);
  }
  ASSERT_EQ(out.shape(), out_shape);
  for (int64_t flat = 0; flat < out.numel(); ++flat) {
    const std::vector<int64_t> out_index = unravel(flat, out_shape);
    std::vector<int64_t> in_index(c.shape.size());
    for (size_t i = 0; i < c.perm.size(); ++i) {
      in_index[static_cast<size_t>(c.perm[i])] = out_index[i];
    }
    ASSERT_EQ(element_bits(out, flat), element_bits(x, ravel(in_index, c.shape))) << "output element " << flat;
  }
}

INSTANTIATE_TEST_SUITE_P(Perms, TransposeTest,
                         ::testing::Values(TransposeCase{DType::kF32, {3, 5}, {1, 0}},
                                           TransposeCase{DType::kF16, {2, 3, 4, 5}, {0, 2, 1, 3}},
                                           TransposeCase{DType::kI64, {2, 3, 4}, {2, 0, 1}},
                                           TransposeCase{DType::kU8, {4, 3, 2}, {1, 2, 0}},
                                           TransposeCase{DType::kF32, {6}, {0}}));

struct SliceCase {
  DType dtype;
  Shape shape;
  int64_t axis;
  int64_t start;
  int64_t end;
  int64_t step;
};

class SliceTest : public ::testing::TestWithParam<SliceCase> {};

TEST_P(SliceTest, TakesEveryStepthRow) {
  const SliceCase& c = GetParam();
  Tensor x = pattern_tensor(c.dtype, c.shape);
  auto outputs =
      run_op(OpKind::kSlice, {&x}, Attributes{{"axis", c.axis}, {"start", c.start}, {"end", c.end}, {"step", c.step}});
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
  const Tensor& out = (*outputs)[0];
  const auto axis = static_cast<size_t>(c.axis < 0 ? c.axis + static_cast<int64_t>(c.shape.size()) : c.axis);
  Shape out_shape = c.shape;
  out_shape[axis] = 0;
  for (int64_t i = c.start; i < c.end; i += c.step) {
    ++out_shape[axis];
  }
  ASSERT_EQ(out.shape(), out_shape);
  for (int64_t flat = 0; flat < out.numel(); ++flat) {
    std::vector<int64_t> index = unravel(flat, out_shape);
    index[axis] = c.start + index[axis] * c.step;
    ASSERT_EQ(element_bits(out, flat), element_bits(x, ravel(index, c.shape))) << "output element " << flat;
  }
}

INSTANTIATE_TEST_SUITE_P(Slices, SliceTest,
                         ::testing::Values(SliceCase{DType::kF32, {3, 7, 4}, 1, 1, 6, 2},
                                           SliceCase{DType::kI32, {10}, 0, 0, 10, 3},
                                           SliceCase{DType::kF16, {2, 3, 8}, -1, 4, 8, 1},
                                           SliceCase{DType::kI64, {5, 2}, 0, 2, 2, 1}));

TEST(ConcatTest, JoinsThreeInputsAlongAxisOne) {
  std::mt19937 rng(81);
  const std::vector<Shape> shapes = {{2, 1, 3}, {2, 2, 3}, {2, 3, 3}};
  std::vector<Tensor> inputs;
  for (const Shape& shape : shapes) {
    inputs.push_back(random_tensor(DType::kF32, shape, rng));
  }
  auto outputs = run_op(OpKind::kConcat, {&inputs[0], &inputs[1], &inputs[2]}, Attributes{{"axis", int64_t{1}}});
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
  const Tensor& out = (*outputs)[0];
  ASSERT_EQ(out.shape(), (Shape{2, 6, 3}));
  std::vector<double> want;
  for (int64_t b = 0; b < 2; ++b) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::vector<double> values = to_doubles(inputs[i]);
      for (int64_t row = 0; row < shapes[i][1]; ++row) {
        for (int64_t d = 0; d < 3; ++d) {
          want.push_back(values[static_cast<size_t>((b * shapes[i][1] + row) * 3 + d)]);
        }
      }
    }
  }
  expect_close(out, want, 0.0, 0.0);
}

TEST(ConcatTest, JoinsAlongTheLastAxisInAnyDtype) {
  Tensor a = pattern_tensor(DType::kI64, {2, 2});
  Tensor b = pattern_tensor(DType::kI64, {2, 1});
  auto outputs = run_op(OpKind::kConcat, {&a, &b}, Attributes{{"axis", int64_t{-1}}});
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
  const Tensor& out = (*outputs)[0];
  ASSERT_EQ(out.shape(), (Shape{2, 3}));
  const std::vector<uint64_t> want = {element_bits(a, 0), element_bits(a, 1), element_bits(b, 0),
                                      element_bits(a, 2), element_bits(a, 3), element_bits(b, 1)};
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(element_bits(out, i), want[static_cast<size_t>(i)]) << "element " << i;
  }
}

// Nearest value with `mantissa_bits` explicit mantissa bits and a minimum normal exponent of
// `min_exponent` (ties to even), in double: f16 is (10, -14), bf16 is (7, -126).
double round_to_format(double x, int mantissa_bits, int min_exponent) {
  if (x == 0.0) {
    return x;
  }
  const int exponent = std::max(static_cast<int>(std::floor(std::log2(std::fabs(x)))), min_exponent);
  const double ulp = std::ldexp(1.0, exponent - mantissa_bits);
  return std::nearbyint(x / ulp) * ulp;
}

TEST(CastTest, F32ToHalfRoundsToNearestEven) {
  std::mt19937 rng(82);
  Tensor x = random_tensor(DType::kF32, {64}, rng, -300.0f, 300.0f);
  float* values = x.data<float>();
  values[0] = 1.0f + 1.0f / 2048.0f;  // halfway between two f16 values: rounds to even (1.0)
  values[1] = 1.0f + 3.0f / 2048.0f;  // halfway: rounds to even (1 + 2/1024)
  values[2] = 3.0e-6f;                // f16 subnormal
  values[3] = -0.0f;
  for (DType half : {DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(std::string(dtype_name(half)));
    auto narrowed = run_op(OpKind::kCast, {&x}, Attributes{{"dtype", std::string(dtype_name(half))}});
    ASSERT_TRUE(narrowed.ok()) << narrowed.status().to_string();
    ASSERT_EQ((*narrowed)[0].dtype(), half);
    auto widened = run_op(OpKind::kCast, {&(*narrowed)[0]}, Attributes{{"dtype", std::string("f32")}});
    ASSERT_TRUE(widened.ok()) << widened.status().to_string();
    std::vector<double> want;
    for (double value : to_doubles(x)) {
      want.push_back(half == DType::kF16 ? round_to_format(value, 10, -14) : round_to_format(value, 7, -126));
    }
    expect_close((*widened)[0], want, 0.0, 0.0);
  }
}

TEST(CastTest, FloatToIntTruncatesTowardZeroAndSaturates) {
  Tensor x =
      f32_tensor({8}, {2.7f, -2.7f, 0.5f, -0.5f, 1e10f, -1e10f, std::numeric_limits<float>::quiet_NaN(), 123456.0f});
  auto to_i32 = run_op(OpKind::kCast, {&x}, Attributes{{"dtype", std::string("i32")}});
  ASSERT_TRUE(to_i32.ok()) << to_i32.status().to_string();
  ASSERT_EQ((*to_i32)[0].dtype(), DType::kI32);
  const int32_t* ints = (*to_i32)[0].data<int32_t>();
  const std::vector<int32_t> want = {
      2, -2, 0, 0, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(), 0, 123456};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(ints[i], want[i]) << "element " << i;
  }
  auto to_i64 = run_op(OpKind::kCast, {&x}, Attributes{{"dtype", std::string("i64")}});
  ASSERT_TRUE(to_i64.ok()) << to_i64.status().to_string();
  EXPECT_EQ((*to_i64)[0].data<int64_t>()[4], int64_t{10000000000});
  EXPECT_EQ((*to_i64)[0].data<int64_t>()[1], -2);
}

TEST(CastTest, IntegersToFloatAndBetweenWidths) {
  const std::vector<int64_t> values = {0, -7, 123456789, (int64_t{1} << 40) + 1, -(int64_t{1} << 33) - 5};
  Tensor x = index_tensor(DType::kI64, values);
  auto to_f32 = run_op(OpKind::kCast, {&x}, Attributes{{"dtype", std::string("f32")}});
  ASSERT_TRUE(to_f32.ok()) << to_f32.status().to_string();
  std::vector<double> want;
  for (int64_t value : values) {
    want.push_back(static_cast<float>(static_cast<double>(value)));  // exact in double, one rounding to float
  }
  expect_close((*to_f32)[0], want, 0.0, 0.0);

  auto to_i32 = run_op(OpKind::kCast, {&x}, Attributes{{"dtype", std::string("i32")}});
  ASSERT_TRUE(to_i32.ok()) << to_i32.status().to_string();
  for (size_t i = 0; i < values.size(); ++i) {
    const auto wrapped = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(values[i])));
    EXPECT_EQ((*to_i32)[0].data<int32_t>()[i], wrapped) << "element " << i;
  }
  auto back = run_op(OpKind::kCast, {&(*to_i32)[0]}, Attributes{{"dtype", std::string("i64")}});
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ((*back)[0].data<int64_t>()[1], -7);
  EXPECT_EQ((*back)[0].data<int64_t>()[2], 123456789);
}

TEST(CastTest, SameDtypeCopies) {
  Tensor x = f32_tensor({3}, {1.5f, -2.0f, 3.25f});
  auto outputs = run_op(OpKind::kCast, {&x}, Attributes{{"dtype", std::string("f32")}});
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
  expect_close((*outputs)[0], {1.5, -2.0, 3.25}, 0.0, 0.0);
}

TEST(RegisterTest, EveryOpHasAPortableKernel) {
  KernelRegistry registry;
  ASSERT_TRUE(register_portable_kernels(registry).ok());
  for (const OpDef& def : all_ops()) {
    ASSERT_EQ(registry.kernels_of(def.kind).size(), 1u) << def.name;
    EXPECT_EQ(registry.kernels_of(def.kind)[0]->name, str_cat("portable.", def.name));
  }
  const Status again = register_portable_kernels(registry);
  EXPECT_FALSE(again.ok());
  EXPECT_NE(again.message().find("already registered"), std::string::npos) << again.message();
}

TEST(FactoryTest, RefusesWhatThePortableBackendDoesNotRun) {
  const Attributes none;
  const TensorSpec q{DType::kF32, {1, 1, 2, 4}};
  const TensorSpec bf16_cache{DType::kBF16, {1, 2, 4, 4}};
  const TensorSpec positions{DType::kI32, {1}};
  auto attention = make_kernel(OpKind::kAttention, {&q, &bf16_cache, &bf16_cache, &positions}, {q}, none);
  ASSERT_FALSE(attention.ok());
  EXPECT_EQ(attention.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(attention.status().message().find("attention: cache dtype bf16"), std::string::npos)
      << attention.status().message();

  const TensorSpec quantized{DType::kQ8_0, {4, 32}};
  auto transpose = make_kernel(OpKind::kTranspose, {&quantized}, {TensorSpec{DType::kQ8_0, {32, 4}}},
                               Attributes{{"perm", std::vector<int64_t>{1, 0}}});
  ASSERT_FALSE(transpose.ok());
  EXPECT_EQ(transpose.status().code(), StatusCode::kUnimplemented);

  const TensorSpec x{DType::kF32, {2}};
  auto cast =
      make_kernel(OpKind::kCast, {&x}, {TensorSpec{DType::kF16, {2}}}, Attributes{{"dtype", std::string("bf16")}});
  ASSERT_FALSE(cast.ok());
  EXPECT_NE(cast.status().message().find("cast: attribute 'dtype' is 'bf16' but the output is f16"), std::string::npos)
      << cast.status().message();

  auto missing_input = make_kernel(OpKind::kLinear, {&x}, {x}, none);
  ASSERT_FALSE(missing_input.ok());
  EXPECT_NE(missing_input.status().message().find("linear: expected 2 to 3 inputs, found 1"), std::string::npos)
      << missing_input.status().message();
}

}  // namespace
}  // namespace staticlm::portable_test
