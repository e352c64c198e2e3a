// SPDX-License-Identifier: Apache-2.0
// The AArch64 kernels beyond what the conformance tests (cpu_kernels_test.cpp,
// quantized_kernels_test.cpp) check against the portable ones: that the registry runs every op
// the cpu backend takes on its NEON kernel, by name (what `inspect` shows), the integer linears
// on smmla or sdot and the bf16 ones on bfmmla / bfdot where the CPU and the cap allow it; the
// bf16 kernels, which round x, against the portable linear on rounded x and against a scalar
// model of their scheme; and the NEON traits' conversions and shuffles against scalar code, every
// f16 bit pattern included.
#include <arm_neon.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <deque>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/backends/cpu/kernels/arm/linear_arm.h"
#include "staticlm/backends/cpu/kernels/arm/simd_neon.h"
#include "staticlm/backends/cpu/kernels/cpu_conformance_util.h"
#include "staticlm/core/half.h"
#include "staticlm/ops/panel_quant.h"

namespace staticlm {
namespace {

using cpu::simd::Neon;
using cpu_test::cpu_registry;
using cpu_test::pack_node;
using cpu_test::PackedNode;
using portable_test::expect_close;
using portable_test::random_tensor;
using portable_test::run_op;
using portable_test::run_op_with;
using portable_test::to_doubles;
namespace tiles = cpu::tiles;

struct NamedCase {
  std::string want;  // the kernel's name
  OpKind op;
  std::vector<Tensor*> inputs;
  Attributes attrs;
};

// Runs each case under the `isa` cap and expects its kernel by name.
void expect_kernels(const char* isa, const std::vector<NamedCase>& cases) {
  const auto features = cpu_features_for_isa(isa);
  ASSERT_TRUE(features.ok()) << features.status().to_string();
  for (const NamedCase& c : cases) {
    SCOPED_TRACE(testing::Message() << isa << ": " << c.want);
    std::string kernel_name;
    auto got = run_op_with(cpu_registry(), *features, c.op, c.inputs, c.attrs, &kernel_name);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_EQ(kernel_name, c.want);
  }
}

// int8 / int4 panels of a [columns, inner] f32 matrix, and the node attributes that say so.
struct QuantizedWeight {
  Tensor packed;
  Attributes attrs;
};

QuantizedWeight quantized_weight(const Tensor& rows, PanelCodes codes) {
  const PanelLayout layout = PanelLayout::quantized(rows.shape()[0], rows.shape()[1], codes, 32);
  QuantizedWeight out{Tensor::zeros(DType::kU8, layout.packed_shape()).value(), {}};
  EXPECT_TRUE(
      quantize_panels({rows.data<float>(), static_cast<size_t>(rows.numel())}, layout, out.packed.bytes(), "w").ok());
  out.attrs.set(std::string(kWeightLayoutAttr), std::string(panel_layout_name(codes)));
  out.attrs.set(std::string(kWeightShapesAttr), std::vector<int64_t>{layout.rows, layout.cols});
  out.attrs.set(std::string(kWeightGroupAttr), layout.group);
  return out;
}

// Every op the cpu backend takes on x86 runs on its NEON kernel here: the float linears (each
// weight dtype, decode and chunk), the fused linears (SwiGLU's and GeGLU's), attention and
// windowed attention over f32 and f16 caches, and the elementwise and row ops. qkv_rope_cache's kernel is checked by
// CpuQkvTest.
TEST(CpuKernelsTest, AArch64RunsEveryOpOnItsNeonKernel) {
  std::mt19937 rng(61);
  std::deque<Tensor> owned;  // a deque: the cases point at its elements
  const auto tensor = [&](DType dtype, const Shape& shape) {
    return &owned.emplace_back(random_tensor(dtype, shape, rng));
  };
  std::deque<PackedNode> nodes;
  std::vector<NamedCase> cases;
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    // bf16 with an odd K: an even one runs on bfmmla / bfdot where the CPU has bf16 (below).
    const int64_t inner = dtype == DType::kBF16 ? 41 : 40;
    for (int64_t rows : {int64_t{1}, int64_t{7}}) {
      const PackedNode& node = nodes.emplace_back(
          pack_node({tensor(DType::kF32, {rows, inner}), tensor(dtype, {33, inner})}, {1}, Attributes{}));
      cases.push_back({"cpu.neon.linear", OpKind::kLinear, node.inputs, node.attrs});
    }
  }
  Tensor* x = tensor(DType::kF32, {3, 40});
  Tensor* gate = tensor(DType::kF32, {36, 40});
  Tensor* up = tensor(DType::kF32, {36, 40});
  const PackedNode& parts = nodes.emplace_back(pack_node({x, gate, up}, {1, 2}, Attributes{{"parts", int64_t{2}}}));
  cases.push_back({"cpu.neon.multi_linear", OpKind::kMultiLinear, parts.inputs, parts.attrs});
  const PackedNode& swiglu = nodes.emplace_back(pack_node({x, gate, up}, {1, 2}, Attributes{}));
  cases.push_back({"cpu.neon.swiglu_linear", OpKind::kSwigluLinear, swiglu.inputs, swiglu.attrs});
  cases.push_back({"cpu.neon.geglu_linear", OpKind::kGegluLinear, swiglu.inputs, swiglu.attrs});
  const PackedNode& residual = nodes.emplace_back(pack_node({x, gate, tensor(DType::kF32, {3, 36})}, {1}, {}));
  cases.push_back({"cpu.neon.linear_add", OpKind::kLinearAdd, residual.inputs, residual.attrs});
  for (DType cache : {DType::kF32, DType::kF16}) {
    Tensor* positions = &owned.emplace_back(portable_test::index_tensor(DType::kI32, {4, 5}));
    cases.push_back(
        {"cpu.neon.attention",
         OpKind::kAttention,
         {tensor(DType::kF32, {1, 2, 4, 32}), tensor(cache, {1, 2, 8, 32}), tensor(cache, {1, 2, 8, 32}), positions},
         {}});
    cases.push_back(
        {"cpu.neon.windowed_attention",
         OpKind::kWindowedAttention,
         {tensor(DType::kF32, {1, 2, 4, 32}), tensor(cache, {1, 2, 8, 32}), tensor(cache, {1, 2, 8, 32}), positions},
         {{"window", int64_t{3}}, {"softcap", 2.0}}});
  }
  Tensor* rope_positions = &owned.emplace_back(portable_test::index_tensor(DType::kI32, {0, 1, 2}));
  cases.push_back(
      {"cpu.neon.rope", OpKind::kRope, {tensor(DType::kF32, {1, 3, 2, 16}), rope_positions}, {{"theta", 10000.0}}});
  cases.push_back({"cpu.neon.rms_norm", OpKind::kRmsNorm, {x, tensor(DType::kF32, {40})}, {{"eps", 1e-5}}});
  cases.push_back({"cpu.neon.swiglu", OpKind::kSwiglu, {x, x}, {}});
  cases.push_back({"cpu.neon.geglu", OpKind::kGeglu, {x, x}, {}});
  cases.push_back({"cpu.neon.add", OpKind::kAdd, {x, x}, {}});
  cases.push_back({"cpu.neon.mul", OpKind::kMul, {x, x}, {}});
  cases.push_back({"cpu.neon.mul", OpKind::kMul, {x, tensor(DType::kF32, {1})}, {}});
  cases.push_back({"cpu.neon.mul", OpKind::kMul, {x, tensor(DType::kF32, {40})}, {}});
  cases.push_back({"cpu.neon.softcap", OpKind::kSoftcap, {x}, {{"cap", 30.0}}});
  cases.push_back({"cpu.neon.rope",
                   OpKind::kRope,
                   {tensor(DType::kF32, {1, 3, 2, 16}), rope_positions},
                   {{"theta", 10000.0}, {"rotary_dim", int64_t{12}}}});
  expect_kernels("auto", cases);
  expect_kernels("neon", cases);
}

// int8 / int4 panels run on smmla where the CPU has i8mm, on sdot where it has dotprod, otherwise
// on the plain NEON kernel, each as far as the cap allows; the fused linears follow the same entry.
TEST(CpuKernelsTest, AArch64RunsIntegerLinearsOnTheWidestProductTheCpuHas) {
  std::mt19937 rng(62);
  Tensor x = random_tensor(DType::kF32, {5, 64}, rng);
  const Tensor rows = random_tensor(DType::kF32, {40, 64}, rng);
  const CpuFeatures host = CpuFeatures::host();
  const char* widest = host.has(CpuFeature::kNeonI8mm) && host.has(CpuFeature::kNeonDotProd) ? "_i8mm"
                       : host.has(CpuFeature::kNeonDotProd)                                  ? "_dotprod"
                                                                                             : "";
  for (PanelCodes codes : {PanelCodes::kInt8, PanelCodes::kInt4}) {
    SCOPED_TRACE(panel_layout_name(codes));
    QuantizedWeight w = quantized_weight(rows, codes);
    Attributes two_parts = w.attrs;
    two_parts.set("parts", int64_t{2});
    two_parts.set(std::string(kWeightShapesAttr), std::vector<int64_t>{40, 64, 40, 64});
    const auto cases = [&](const std::string& suffix) {
      return std::vector<NamedCase>{
          {"cpu.neon.linear" + suffix, OpKind::kLinear, {&x, &w.packed}, w.attrs},
          {"cpu.neon.multi_linear" + suffix, OpKind::kMultiLinear, {&x, &w.packed, &w.packed}, two_parts},
      };
    };
    expect_kernels("neon", cases(""));
    expect_kernels("auto", cases(widest));
    if (host.has(CpuFeature::kNeonDotProd)) {
      expect_kernels("dotprod", cases("_dotprod"));
    }
    if (std::string(widest) == "_i8mm") {
      expect_kernels("i8mm", cases("_i8mm"));
    }
  }
}

bool host_has_bf16() {
  return CpuFeatures::host().has(CpuFeature::kNeonBf16);
}

// bf16 weights with an even K run on the bf16 entry where the CPU has bf16 and the cap allows it
// (auto, bf16), every linear kind, decode and chunk; the i8mm cap below it, an odd K and other
// weights take the entries they took before.
TEST(CpuKernelsTest, AArch64RunsBf16LinearsOnBfmmlaWhereTheCpuHasBf16) {
  std::mt19937 rng(63);
  std::deque<Tensor> owned;
  const auto tensor = [&](DType dtype, const Shape& shape) {
    return &owned.emplace_back(random_tensor(dtype, shape, rng));
  };
  std::deque<PackedNode> nodes;
  const auto cases = [&](DType dtype, int64_t inner, const std::string& suffix) {
    std::vector<NamedCase> out;
    for (int64_t rows : {int64_t{1}, int64_t{7}}) {
      Tensor* x = tensor(DType::kF32, {rows, inner});
      Tensor* gate = tensor(dtype, {36, inner});
      Tensor* up = tensor(dtype, {36, inner});
      const PackedNode& linear = nodes.emplace_back(pack_node({x, gate}, {1}, {}));
      out.push_back({"cpu.neon.linear" + suffix, OpKind::kLinear, linear.inputs, linear.attrs});
      const PackedNode& parts = nodes.emplace_back(pack_node({x, gate, up}, {1, 2}, {{"parts", int64_t{2}}}));
      out.push_back({"cpu.neon.multi_linear" + suffix, OpKind::kMultiLinear, parts.inputs, parts.attrs});
      const PackedNode& swiglu = nodes.emplace_back(pack_node({x, gate, up}, {1, 2}, {}));
      out.push_back({"cpu.neon.swiglu_linear" + suffix, OpKind::kSwigluLinear, swiglu.inputs, swiglu.attrs});
      const PackedNode& residual = nodes.emplace_back(pack_node({x, gate, tensor(DType::kF32, {rows, 36})}, {1}, {}));
      out.push_back({"cpu.neon.linear_add" + suffix, OpKind::kLinearAdd, residual.inputs, residual.attrs});
    }
    return out;
  };
  const std::string widest = host_has_bf16() ? "_bf16" : "";
  expect_kernels("auto", cases(DType::kBF16, 64, widest));
  expect_kernels("bf16", cases(DType::kBF16, 64, widest));
  expect_kernels("i8mm", cases(DType::kBF16, 64, ""));
  expect_kernels("neon", cases(DType::kBF16, 64, ""));
  expect_kernels("bf16", cases(DType::kBF16, 63, ""));
  expect_kernels("bf16", cases(DType::kF32, 64, ""));
  expect_kernels("bf16", cases(DType::kF16, 64, ""));
}

// x rounded to bf16 (to nearest even), as the portable oracle rounds it.
void round_x(Tensor& x) {
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.data<float>()[i] = bf16_to_f32(f32_to_bf16(x.data<float>()[i]));
  }
}

// Runs `op` under the bf16 cap, expects `kernel` and, on x rounded to bf16, the portable kernel's
// outputs within `tolerance` (x86's bf16 GEMM's: only the summation order differs); with
// `padding`, a left-padded chunk whose padding rows are left unwritten.
void expect_bf16_conforms(const std::string& kernel, OpKind op, Tensor& x, const std::vector<Tensor*>& inputs,
                          const std::vector<size_t>& matrices, const Attributes& attrs, int64_t padding = 0,
                          double tolerance = 1e-5) {
  const PackedNode node = pack_node(inputs, matrices, attrs);
  const int64_t rows = num_elements(std::span<const int64_t>(x.shape()).first(x.shape().size() - 1));
  std::string kernel_name;
  auto got = run_op_with(cpu_registry(), *cpu_features_for_isa("bf16"), op, node.inputs, node.attrs, &kernel_name,
                         {padding > 0 ? rows : 0, padding, cpu_test::kUnwritten});
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(kernel_name, kernel);
  round_x(x);
  auto want = run_op(op, inputs, attrs);
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < got->size(); ++i) {
    if (padding == 0) {
      expect_close((*got)[i], to_doubles((*want)[i]), tolerance, tolerance);
    } else {
      cpu_test::expect_padding_rows_unwritten((*got)[i], (*want)[i], rows, padding, tolerance);
    }
  }
}

struct Bf16Case {
  int64_t rows;
  int64_t inner;
  int64_t columns;
  bool bias;
  int64_t padding;
};

// The conformance of the bf16 entry (bfdot decode, bfmmla chunks), x86's bf16 GEMM's oracle and
// tolerance: the portable linear on x rounded to bf16. Odd sizes: decode, every remainder of the
// blocks of 4 rows, half and partial panels, an odd count of pairs (a last K step of 2), several
// K blocks of 128 pairs, panels split into slices of rows, padding rows; and the fused linears.
TEST(CpuBf16LinearTest, BfmmlaAndBfdotEqualThePortableLinearOnBf16RoundedX) {
  if (!host_has_bf16()) {
    GTEST_SKIP() << "this CPU has no bf16 (it has: " << CpuFeatures::host().to_string() << ")";
  }
  std::mt19937 rng(64);
  const std::vector<Bf16Case> cases = {
      {1, 64, 37, false, 0},  {1, 2, 5, true, 0},      {1, 578, 96, false, 0},  {1, 258, 33, true, 0},
      {2, 64, 16, false, 0},  {3, 6, 17, true, 0},     {4, 130, 40, false, 0},  {5, 260, 70, true, 0},
      {6, 66, 1, false, 0},   {7, 600, 64, false, 0},  {9, 34, 100, true, 0},   {13, 514, 32, false, 0},
      {33, 256, 48, true, 0}, {40, 600, 70, true, 0},  {64, 96, 130, false, 0}, {128, 66, 288, true, 0},
      {16, 64, 40, false, 5}, {12, 130, 70, true, 11}, {9, 34, 33, false, 1},
  };
  for (const Bf16Case& c : cases) {
    SCOPED_TRACE(testing::Message() << "x[" << c.rows << ", " << c.inner << "] w[" << c.columns << "]"
                                    << (c.bias ? " + bias" : "") << ", padding " << c.padding);
    Tensor x = random_tensor(DType::kF32, {c.rows, c.inner}, rng);
    Tensor weight = random_tensor(DType::kBF16, {c.columns, c.inner}, rng);
    Tensor bias = random_tensor(DType::kBF16, {c.columns}, rng);
    std::vector<Tensor*> inputs = {&x, &weight};
    if (c.bias) {
      inputs.push_back(&bias);
    }
    expect_bf16_conforms("cpu.neon.linear_bf16", OpKind::kLinear, x, inputs, {1}, {}, c.padding);
  }
  for (int64_t rows : {int64_t{1}, int64_t{7}, int64_t{40}}) {
    SCOPED_TRACE(testing::Message() << rows << " rows");
    Tensor x = random_tensor(DType::kF32, {rows, 130}, rng);
    Tensor gate = random_tensor(DType::kBF16, {70, 130}, rng);
    Tensor up = random_tensor(DType::kBF16, {70, 130}, rng);
    Tensor residual = random_tensor(DType::kF32, {rows, 70}, rng);
    expect_bf16_conforms("cpu.neon.multi_linear_bf16", OpKind::kMultiLinear, x, {&x, &gate, &up}, {1, 2},
                         {{"parts", int64_t{2}}});
    x = random_tensor(DType::kF32, {rows, 130}, rng);
    expect_bf16_conforms("cpu.neon.swiglu_linear_bf16", OpKind::kSwigluLinear, x, {&x, &gate, &up}, {1, 2}, {});
    x = random_tensor(DType::kF32, {rows, 130}, rng);
    expect_bf16_conforms("cpu.neon.linear_add_bf16", OpKind::kLinearAdd, x, {&x, &gate, &residual}, {1}, {});
  }
}

// qkv_rope_cache on the bf16 entry: decode and a chunk with rows at negative positions (not
// written), GQA, f16 caches, biases; the queries and both whole caches against the portable
// kernel on x rounded to bf16, within the qkv tests' 1e-4 (the caches hold f16).
TEST(CpuBf16LinearTest, QkvRopeCacheEqualsThePortableOneOnBf16RoundedX) {
  if (!host_has_bf16()) {
    GTEST_SKIP() << "this CPU has no bf16 (it has: " << CpuFeatures::host().to_string() << ")";
  }
  std::mt19937 rng(67);
  const auto copy_of = [](const Tensor& tensor) {
    Tensor out = Tensor::zeros(tensor.dtype(), tensor.shape()).value();
    std::copy(tensor.bytes().begin(), tensor.bytes().end(), out.bytes().begin());
    return out;
  };
  for (const std::vector<int64_t>& slots : {std::vector<int64_t>{5}, std::vector<int64_t>{-1, 0, 1, 2, 3, -1, 4}}) {
    const auto rows = static_cast<int64_t>(slots.size());
    SCOPED_TRACE(testing::Message() << rows << " rows");
    Tensor x = random_tensor(DType::kF32, {1, rows, 64}, rng);
    Tensor wq = random_tensor(DType::kBF16, {128, 64}, rng);
    Tensor wk = random_tensor(DType::kBF16, {64, 64}, rng);
    Tensor wv = random_tensor(DType::kBF16, {64, 64}, rng);
    Tensor k_cache = random_tensor(DType::kF16, {1, 2, 13, 32}, rng);
    Tensor v_cache = random_tensor(DType::kF16, {1, 2, 13, 32}, rng);
    Tensor positions = Tensor::zeros(DType::kI64, {rows}).value();
    std::copy(slots.begin(), slots.end(), positions.data<int64_t>());
    Tensor bq = random_tensor(DType::kBF16, {128}, rng);
    Tensor bk = random_tensor(DType::kBF16, {64}, rng);
    Tensor bv = random_tensor(DType::kBF16, {64}, rng);
    const std::vector<Tensor*> inputs = {&x, &wq, &wk, &wv, &k_cache, &v_cache, &positions, &bq, &bk, &bv};
    const Attributes rope{{"theta", 10000.0}};
    // Each run updates its caches in place: the cpu kernel gets its own copies.
    PackedNode node = pack_node(inputs, {1, 2, 3}, rope);
    Tensor own_k = copy_of(k_cache);
    Tensor own_v = copy_of(v_cache);
    node.inputs[4] = &own_k;
    node.inputs[5] = &own_v;
    std::string kernel_name;
    auto got = run_op_with(cpu_registry(), *cpu_features_for_isa("bf16"), OpKind::kQkvRopeCache, node.inputs,
                           node.attrs, &kernel_name);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_EQ(kernel_name, "cpu.neon.qkv_rope_cache_bf16");
    round_x(x);
    auto want = run_op(OpKind::kQkvRopeCache, inputs, rope);
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < got->size(); ++i) {
      expect_close((*got)[i], to_doubles((*want)[i]), 1e-4, 1e-4);
    }
  }
}

// bfcvtn rounds as the scalar conversion (to nearest even): ties both ways, the largest finite
// values, infinities, zeros, subnormals, and random values, in whole registers and tails.
TEST(CpuBf16LinearTest, RoundsXAsTheScalarConversion) {
  if (!host_has_bf16()) {
    GTEST_SKIP() << "this CPU has no bf16 (it has: " << CpuFeatures::host().to_string() << ")";
  }
  std::vector<float> values = {1.0f,
                               std::bit_cast<float>(0x3F808000u),  // a tie, rounded down to even
                               std::bit_cast<float>(0x3F818000u),  // a tie, rounded up to even
                               std::bit_cast<float>(0x3F808001u),
                               -std::bit_cast<float>(0x3F818000u),
                               std::bit_cast<float>(0x7F7FFFFFu),  // rounds to infinity
                               std::bit_cast<float>(0x7F7F0000u),
                               INFINITY,
                               -INFINITY,
                               0.0f,
                               -0.0f,
                               std::bit_cast<float>(0x00400000u),  // a subnormal, kept
                               std::bit_cast<float>(0x80018000u)};
  std::mt19937 rng(65);
  std::uniform_int_distribution<uint32_t> bits(0, 0x7F7FFFFFu);
  for (int i = 0; i < 4096; ++i) {
    values.push_back(std::bit_cast<float>(bits(rng) | (i % 2 == 0 ? 0u : 0x80000000u)));
  }
  for (size_t count : {values.size(), size_t{13}, size_t{7}, size_t{1}}) {
    std::vector<uint16_t> got(count + 1, 0xAAAA);
    cpu::round_to_bf16_neon(values.data(), static_cast<int64_t>(count), got.data());
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(got[i], f32_to_bf16(values[i])) << "value " << i << " " << values[i];
    }
    EXPECT_EQ(got[count], 0xAAAA) << "written past the end";
  }
}

// The scalar model of the bf16 kernels' scheme: x rounded to bf16 by the kernel's own rounding,
// the panels' bf16 weights as stored, each product exact in f32 and summed in f32. The kernels
// add 2 (bfdot) or 4 (bfmmla) products at a time in their own order, each sum rounded once, so
// they differ from the exact sum by at most an ulp of the partial sums' magnitude per step:
// checked within (steps) x 2^-23 x sum |x w|, far below a bf16 step of one x value on these
// sizes. Called directly, over ranges of columns that start past the first panel.
TEST(CpuBf16LinearTest, KernelsMatchTheScalarModelOfTheirScheme) {
  if (!host_has_bf16()) {
    GTEST_SKIP() << "this CPU has no bf16 (it has: " << CpuFeatures::host().to_string() << ")";
  }
  struct Case {
    int64_t rows, inner, columns, n_begin;
  };
  const Case cases[] = {{1, 64, 70, 0},   {1, 6, 33, 32},  {1, 520, 96, 32}, {2, 64, 40, 0},  {3, 2, 17, 0},
                        {4, 258, 64, 32}, {5, 34, 70, 32}, {8, 130, 16, 0},  {9, 520, 48, 0}, {13, 66, 100, 64}};
  std::mt19937 rng(66);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  alignas(64) static float scratch[cpu::kLinearScratchFloats];
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << "x[" << c.rows << ", " << c.inner << "] w[" << c.columns << "] from column "
                                    << c.n_begin);
    std::vector<float> x(static_cast<size_t>(c.rows * c.inner));
    for (float& v : x) {
      v = uniform(rng);
    }
    Tensor weight = random_tensor(DType::kBF16, {c.columns, c.inner}, rng);
    const Tensor panels = cpu_test::packed(weight);
    std::vector<uint16_t> x_bf16(x.size());
    cpu::round_to_bf16_neon(x.data(), static_cast<int64_t>(x.size()), x_bf16.data());
    std::vector<float> out(static_cast<size_t>(c.rows * c.columns), cpu_test::kUnwritten);
    cpu::LinearOperands op;
    op.x = x.data();
    op.x_bf16 = x_bf16.data();
    op.weight = panels.bytes().data();
    op.out = out.data();
    op.rows = c.rows;
    op.inner = c.inner;
    op.columns = c.columns;
    op.panel_elements = PanelLayout::of(c.columns, c.inner, DType::kBF16).panel_elements();
    op.weight_dtype = DType::kBF16;
    cpu::linear_columns_bf16(op, c.n_begin, c.columns, scratch);
    const uint16_t* w = reinterpret_cast<const uint16_t*>(weight.bytes().data());
    const double steps = static_cast<double>((c.inner + 3) / 4);
    for (int64_t m = 0; m < c.rows; ++m) {
      for (int64_t n = 0; n < c.columns; ++n) {
        const float got = out[static_cast<size_t>(m * c.columns + n)];
        if (n < c.n_begin) {
          ASSERT_EQ(got, cpu_test::kUnwritten) << "column " << n << " was written";
          continue;
        }
        double sum = 0.0, magnitude = 0.0;
        for (int64_t k = 0; k < c.inner; ++k) {
          const double product = static_cast<double>(bf16_to_f32(x_bf16[static_cast<size_t>(m * c.inner + k)])) *
                                 static_cast<double>(bf16_to_f32(w[n * c.inner + k]));
          sum += product;
          magnitude += std::fabs(product);
        }
        ASSERT_NEAR(got, sum, steps * std::ldexp(magnitude, -23) + 1e-30) << "row " << m << " column " << n;
      }
    }
  }
}

// A register's lanes.
std::vector<float> lanes(float32x4_t r) {
  std::vector<float> out(Neon::kWidth);
  vst1q_f32(out.data(), r);
  return out;
}

void expect_same_float(float got, float want) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << got;
  } else {
    uint32_t got_bits = 0, want_bits = 0;
    std::memcpy(&got_bits, &got, 4);
    std::memcpy(&want_bits, &want, 4);
    EXPECT_EQ(got_bits, want_bits) << got << " for " << want;
  }
}

// fcvtl widens every f16 (subnormals, infinities, NaNs, negative zero) as the scalar conversion
// does, in each lane, whole registers and tails.
TEST(NeonTraitsTest, WidensEveryF16AsTheScalarConversion) {
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) {
    all[i] = static_cast<uint16_t>(i);
  }
  for (size_t i = 0; i < all.size(); i += Neon::kWidth) {
    const std::vector<float> got = lanes(Neon::load(tiles::F16{}, all.data() + i));
    for (int lane = 0; lane < Neon::kWidth; ++lane) {
      expect_same_float(got[static_cast<size_t>(lane)], f16_to_f32(all[i + static_cast<size_t>(lane)]));
    }
  }
  const uint16_t three[] = {0x3C00, 0xC000, 0x0001};  // 1, -2, the smallest subnormal
  const std::vector<float> tail = lanes(Neon::load_tail(tiles::F16{}, three, 3));
  EXPECT_EQ(tail, (std::vector<float>{1.0f, -2.0f, f16_to_f32(0x0001), 0.0f}));
}

// bf16 is the top half of an f32: loads of bf16 elements and the even / odd halves of bf16
// pairs (the panel layout's words) widen to it exactly.
TEST(NeonTraitsTest, WidensBf16ElementsAndPairs) {
  const uint16_t elements[] = {0x3F80, 0xC0A0, 0x7F80, 0x0001, 0x8000};  // 1, -5, infinity, a subnormal, -0
  const std::vector<float> got = lanes(Neon::load(tiles::Bf16{}, elements));
  for (int lane = 0; lane < Neon::kWidth; ++lane) {
    expect_same_float(got[static_cast<size_t>(lane)], bf16_to_f32(elements[lane]));
  }
  const std::vector<float> tail = lanes(Neon::load_tail(tiles::Bf16{}, elements + 1, 2));
  EXPECT_EQ(tail, (std::vector<float>{-5.0f, INFINITY, 0.0f, 0.0f}));
  // Word j: k = 2g (low half) and 2g + 1 (high half) of column j.
  const uint32_t words[] = {0xC0A03F80u, 0x3F800000u, 0x7F80C000u, 0x00014040u};
  EXPECT_EQ(lanes(Neon::pair_lo(words)), (std::vector<float>{1.0f, 0.0f, -2.0f, 3.0f}));
  const std::vector<float> high = lanes(Neon::pair_hi(words));
  EXPECT_EQ(high[0], -5.0f);
  EXPECT_EQ(high[1], 1.0f);
  EXPECT_EQ(high[2], INFINITY);
  expect_same_float(high[3], bf16_to_f32(0x0001));
}

// Tails read and write only their n lanes: the rest of a loaded register is zero, memory past
// a stored tail is untouched.
TEST(NeonTraitsTest, TailsTouchOnlyTheirLanes) {
  const float source[] = {1.0f, 2.0f, 3.0f, 4.0f};
  const float32x4_t full = vld1q_f32(source);
  for (int n = 1; n < Neon::kWidth; ++n) {
    SCOPED_TRACE(n);
    const std::vector<float> loaded = lanes(Neon::load_tail(tiles::F32{}, source, n));
    float stored[] = {-1.0f, -1.0f, -1.0f, -1.0f};
    Neon::store_tail(stored, full, n);
    for (int lane = 0; lane < Neon::kWidth; ++lane) {
      EXPECT_EQ(loaded[static_cast<size_t>(lane)], lane < n ? source[lane] : 0.0f) << lane;
      EXPECT_EQ(stored[lane], lane < n ? source[lane] : -1.0f) << lane;
    }
  }
}

// The attention's shuffles: sum_each's lane i is register i's lane sum, transpose swaps lanes and
// registers; hsum, round (ties to even) and exp2_int on known values.
TEST(NeonTraitsTest, ShufflesAndReductionsMatchScalarCode) {
  float32x4_t r[4];
  float values[4][4];
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      values[i][j] = static_cast<float>(10 * i + j) + 0.25f * static_cast<float>(j * j);
    }
    r[i] = vld1q_f32(values[i]);
  }
  const std::vector<float> sums = lanes(Neon::sum_each(r));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(sums[static_cast<size_t>(i)], (values[i][0] + values[i][1]) + (values[i][2] + values[i][3])) << i;
    EXPECT_EQ(Neon::hsum(r[i]), values[i][0] + values[i][1] + values[i][2] + values[i][3]) << i;
  }
  Neon::transpose(r);
  for (int i = 0; i < 4; ++i) {
    const std::vector<float> row = lanes(r[i]);
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(row[static_cast<size_t>(j)], values[j][i]) << "row " << i << " lane " << j;
    }
  }
  const float halves[] = {0.5f, 1.5f, 2.5f, -0.5f};
  EXPECT_EQ(lanes(Neon::round(vld1q_f32(halves))), (std::vector<float>{0.0f, 2.0f, 2.0f, -0.0f}));
  const float exponents[] = {-126.0f, 0.0f, 1.0f, 127.0f};
  EXPECT_EQ(lanes(Neon::exp2_int(vld1q_f32(exponents))),
            (std::vector<float>{std::ldexp(1.0f, -126), 1.0f, 2.0f, std::ldexp(1.0f, 127)}));
}

}  // namespace
}  // namespace staticlm
