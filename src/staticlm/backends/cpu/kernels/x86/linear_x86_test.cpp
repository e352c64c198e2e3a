// SPDX-License-Identifier: Apache-2.0
// The x86 linear entry points that the registry-level tests (cpu_kernels_test.cpp) cannot reach
// by a cap alone: the bf16 GEMMs that round x (vdpbf16ps pairs, AMX tiles) against the portable
// linear on rounded x, and the AVX-512 GEMM called directly over spans of columns.
#include "staticlm/backends/cpu/kernels/x86/linear_x86.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/backends/cpu/kernels/cpu_conformance_util.h"
#include "staticlm/backends/portable/kernel_test_util.h"
#include "staticlm/core/half.h"
#include "staticlm/ops/weight_layout.h"

namespace staticlm {
namespace {

using cpu_test::cpu_registry;
using cpu_test::pack_node;
using cpu_test::PackedNode;
using portable_test::expect_close;
using portable_test::random_tensor;
using portable_test::run_op;
using portable_test::run_op_with;
using portable_test::to_doubles;

struct LinearCase {
  DType weight;
  int64_t rows;
  int64_t inner;
  int64_t columns;
  bool bias;
};

// The bf16 GEMMs that round x (vdpbf16ps pairs, AMX tiles) against the portable linear on x
// rounded to bf16, through the entry `suffix` names ("_bf16", "_amx") under the `isa` cap, which
// rounds x from `min_rows` rows.
void expect_bf16_gemm_conforms(const char* isa, const char* suffix, int64_t min_rows) {
  std::mt19937 rng(28);
  const CpuFeatures features = *cpu_features_for_isa(isa);
  // Chunks of 32 rows or more with an even K: several K blocks and pair tails (tiles of 16
  // pairs: 600 and 290 leave 12 and 1), partial panels, row blocks of 32 with tails of 16 and
  // fewer; and, where the entry rounds them, chunks of a few rows (one tile of fewer rows).
  std::vector<LinearCase> cases = {{DType::kBF16, 40, 600, 70, true},
                                   {DType::kBF16, 32, 2, 33, false},
                                   {DType::kBF16, 128, 576, 96, false},
                                   {DType::kBF16, 33, 290, 5, false},
                                   // Remainders of the 8-row blocks: 7, 6, 3.
                                   {DType::kBF16, 39, 64, 40, false},
                                   {DType::kBF16, 46, 258, 32, true},
                                   {DType::kBF16, 35, 30, 64, false},
                                   {DType::kBF16, 48, 96, 64, false}};
  if (min_rows <= 2) {
    cases.insert(
        cases.end(),
        {{DType::kBF16, 2, 576, 64, false}, {DType::kBF16, 8, 290, 40, true}, {DType::kBF16, 17, 64, 96, false}});
  }
  for (const LinearCase& c : cases) {
    SCOPED_TRACE(testing::Message() << "x[" << c.rows << ", " << c.inner << "] w[" << c.columns << "]");
    Tensor x = random_tensor(DType::kF32, {c.rows, c.inner}, rng);
    Tensor weight = random_tensor(DType::kBF16, {c.columns, c.inner}, rng);
    Tensor bias = random_tensor(DType::kBF16, {c.columns}, rng);
    std::vector<Tensor*> inputs = {&x, &weight};
    if (c.bias) {
      inputs.push_back(&bias);
    }
    const PackedNode node = pack_node(inputs, {1}, {});
    std::string kernel_name;
    auto got = run_op_with(cpu_registry(), features, OpKind::kLinear, node.inputs, node.attrs, &kernel_name);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_EQ(kernel_name, std::string("cpu.avx512.linear") + suffix);
    // The oracle: the portable linear on x rounded to bf16 (to nearest even), as the kernel does.
    for (int64_t i = 0; i < x.numel(); ++i) {
      x.data<float>()[i] = bf16_to_f32(f32_to_bf16(x.data<float>()[i]));
    }
    auto want = run_op(OpKind::kLinear, inputs);
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    expect_close((*got)[0], to_doubles((*want)[0]), 1e-5, 1e-5);
  }
  // multi_linear on the same GEMM: x rounded once for every part.
  Tensor x = random_tensor(DType::kF32, {40, 130}, rng);
  Tensor gate = random_tensor(DType::kBF16, {70, 130}, rng);
  Tensor up = random_tensor(DType::kBF16, {33, 130}, rng);
  const Attributes parts{{"parts", int64_t{2}}};
  const PackedNode node = pack_node({&x, &gate, &up}, {1, 2}, parts);
  std::string kernel_name;
  auto got = run_op_with(cpu_registry(), features, OpKind::kMultiLinear, node.inputs, node.attrs, &kernel_name);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(kernel_name, std::string("cpu.avx512.multi_linear") + suffix);
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.data<float>()[i] = bf16_to_f32(f32_to_bf16(x.data<float>()[i]));
  }
  auto want = run_op(OpKind::kMultiLinear, {&x, &gate, &up}, parts);
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  ASSERT_EQ(got->size(), 2u);
  expect_close((*got)[0], to_doubles((*want)[0]), 1e-5, 1e-5);
  expect_close((*got)[1], to_doubles((*want)[1]), 1e-5, 1e-5);
}

TEST(CpuBf16LinearTest, ThePairGemmEqualsThePortableLinearOnBf16RoundedX) {
  const CpuFeatures needed =
      CpuFeatures().with(CpuFeature::kAvx2).with(CpuFeature::kAvx512).with(CpuFeature::kAvx512Bf16);
  if (!CpuFeatures::host().covers(needed)) {
    GTEST_SKIP() << "this CPU has no AVX-512 BF16 (it has: " << CpuFeatures::host().to_string() << ")";
  }
  expect_bf16_gemm_conforms("avx512", "_bf16", cpu::kPackedMinRows);
}

TEST(CpuBf16LinearTest, TheAmxGemmEqualsThePortableLinearOnBf16RoundedX) {
  if (!CpuFeatures::host().has(CpuFeature::kAmxBf16)) {
    GTEST_SKIP() << "this CPU has no usable AMX-BF16 tiles (it has: " << CpuFeatures::host().to_string() << ")";
  }
  expect_bf16_gemm_conforms("amx", "_amx", cpu::kTileMinRows);
}

// Where x is larger than an L2, one call over many panel pairs runs them in groups, K block by K
// block across each group (gemm_pairs); a call per 64-column item runs one pair. Each output is
// the same sum in the same order either way, so the bits match: several groups and a partial
// one, many K blocks and a partial one, a lone partial panel after the pairs, each float weight
// dtype.
TEST(CpuLinearColumnsTest, ACallOverManyPairsGivesTheBitsOfACallPerPair) {
  if (!CpuFeatures::host().covers(CpuFeatures().with(CpuFeature::kAvx2).with(CpuFeature::kAvx512))) {
    GTEST_SKIP() << "this CPU has no AVX-512 (it has: " << CpuFeatures::host().to_string() << ")";
  }
  std::mt19937 rng(31);
  const int64_t rows = 64;
  const int64_t inner = 8300;                           // x: 2.1 MB, over tiles::kGroupedXBytes
  const int64_t columns = 21 * cpu::kPanelColumns + 9;  // 10 pairs, then a partial panel
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor x = random_tensor(DType::kF32, {rows, inner}, rng);
    const Tensor weight = random_tensor(dtype, {columns, inner}, rng);
    const PanelLayout layout = PanelLayout::of(columns, inner, dtype);
    Tensor packed = Tensor::zeros(dtype, layout.packed_shape()).value();
    pack_panels(weight.bytes(), dtype_info(dtype).block_bytes, layout, packed.bytes());
    cpu::LinearOperands op;
    op.x = x.data<float>();
    op.weight = packed.bytes().data();
    op.rows = rows;
    op.inner = inner;
    op.columns = columns;
    op.panel_elements = layout.panel_elements();
    op.weight_dtype = dtype;
    std::vector<float> scratch(static_cast<size_t>(cpu::kLinearScratchFloats));
    std::vector<float> whole(static_cast<size_t>(rows * columns));
    op.out = whole.data();
    cpu::linear_columns_avx512(op, 0, columns, scratch.data());
    std::vector<float> per_item(whole.size());
    op.out = per_item.data();
    for (int64_t n = 0; n < columns; n += 2 * cpu::kPanelColumns) {
      cpu::linear_columns_avx512(op, n, std::min(columns, n + 2 * cpu::kPanelColumns), scratch.data());
    }
    EXPECT_EQ(whole, per_item);
  }
}

}  // namespace
}  // namespace staticlm
