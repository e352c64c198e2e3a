// SPDX-License-Identifier: Apache-2.0
// The AArch64 kernels beyond what the conformance tests (cpu_kernels_test.cpp,
// quantized_kernels_test.cpp) check against the portable ones: that the registry runs every op
// the cpu backend takes on its NEON kernel, by name (what `inspect` shows), the integer linears
// on smmla or sdot where the CPU and the cap allow it; and the NEON traits' conversions and
// shuffles against scalar code, every f16 bit pattern included.
#include <arm_neon.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

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
using portable_test::random_tensor;
using portable_test::run_op_with;
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
// weight dtype, decode and chunk), the fused linears, attention over f32 and f16 caches, and the
// elementwise and row ops. qkv_rope_cache's kernel is checked by CpuQkvTest.
TEST(CpuKernelsTest, AArch64RunsEveryOpOnItsNeonKernel) {
  std::mt19937 rng(61);
  std::deque<Tensor> owned;  // a deque: the cases point at its elements
  const auto tensor = [&](DType dtype, const Shape& shape) {
    return &owned.emplace_back(random_tensor(dtype, shape, rng));
  };
  std::deque<PackedNode> nodes;
  std::vector<NamedCase> cases;
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (int64_t rows : {int64_t{1}, int64_t{7}}) {
      const PackedNode& node =
          nodes.emplace_back(pack_node({tensor(DType::kF32, {rows, 40}), tensor(dtype, {33, 40})}, {1}, Attributes{}));
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
  const PackedNode& residual = nodes.emplace_back(pack_node({x, gate, tensor(DType::kF32, {3, 36})}, {1}, {}));
  cases.push_back({"cpu.neon.linear_add", OpKind::kLinearAdd, residual.inputs, residual.attrs});
  for (DType cache : {DType::kF32, DType::kF16}) {
    Tensor* positions = &owned.emplace_back(portable_test::index_tensor(DType::kI32, {4, 5}));
    cases.push_back(
        {"cpu.neon.attention",
         OpKind::kAttention,
         {tensor(DType::kF32, {1, 2, 4, 32}), tensor(cache, {1, 2, 8, 32}), tensor(cache, {1, 2, 8, 32}), positions},
         {}});
  }
  Tensor* rope_positions = &owned.emplace_back(portable_test::index_tensor(DType::kI32, {0, 1, 2}));
  cases.push_back(
      {"cpu.neon.rope", OpKind::kRope, {tensor(DType::kF32, {1, 3, 2, 16}), rope_positions}, {{"theta", 10000.0}}});
  cases.push_back({"cpu.neon.rms_norm", OpKind::kRmsNorm, {x, tensor(DType::kF32, {40})}, {{"eps", 1e-5}}});
  cases.push_back({"cpu.neon.swiglu", OpKind::kSwiglu, {x, x}, {}});
  cases.push_back({"cpu.neon.add", OpKind::kAdd, {x, x}, {}});
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
