// SPDX-License-Identifier: Apache-2.0
// Conformance: every cpu-backend kernel against the portable kernel it replaces, on fresh random
// inputs, for each weight dtype, sizes that are not multiples of the SIMD width or the tile, and
// each instruction-set path this build compiled and this machine has (a path the CPU lacks is
// skipped, saying so; a build without native kernels checks that the portable ones run instead).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/backends/cpu/kernels/cpu_conformance_util.h"
#include "staticlm/backends/cpu/kernels/linear_parts.h"
#include "staticlm/backends/cpu/kernels/register.h"
#include "staticlm/backends/portable/kernel_test_util.h"
#include "staticlm/core/half.h"
#include "staticlm/core/str_cat.h"
#include "staticlm/core/thread_pool.h"
#include "staticlm/ops/weight_layout.h"

namespace staticlm {
namespace {

using cpu_test::cpu_registry;
using cpu_test::expect_conforms;
using cpu_test::expect_packed_conforms;
using cpu_test::expect_padding_rows_skipped;
using cpu_test::host_has;
using cpu_test::IsaPath;
using cpu_test::pack_node;
using cpu_test::PackedNode;
using cpu_test::path_name;
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

class CpuLinearTest : public ::testing::TestWithParam<IsaPath> {};

TEST_P(CpuLinearTest, MatchesThePortableLinear) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa << " (it has: " << CpuFeatures::host().to_string() << ")";
  }
  std::mt19937 rng(21);
  // Rows: decode (1), fewer than a micro-kernel block, a block and a remainder, a chunk. Inner:
  // below, at and off the vector width, odd (a bf16 panel's last pair half empty). Columns: below,
  // at and off the 32-column panel.
  const std::vector<LinearCase> cases = {
      {DType::kF32, 1, 576, 37, false},
      {DType::kF32, 5, 33, 9, true},
      {DType::kF32, 9, 16, 4, false},
      {DType::kF32, 3, 7, 6, true},
      {DType::kF32, 4, 1, 3, false},
      {DType::kF16, 1, 100, 13, true},
      {DType::kF16, 7, 48, 10, false},
      {DType::kF16, 2, 5, 5, false},
      {DType::kBF16, 1, 257, 11, false},
      {DType::kBF16, 6, 64, 7, true},
      {DType::kBF16, 13, 9, 2, false},
      {DType::kF32, 64, 96, 130, true},
      // Chunks of 32 rows or more: several K blocks, partial panels of 32 columns.
      {DType::kF32, 40, 600, 70, true},
      {DType::kF16, 33, 300, 33, false},
      {DType::kBF16, 48, 257, 40, true},
      {DType::kF32, 32, 512, 64, false},
      // Calls of a few rows, whose f32 / f16 panels are read in place as a stream: several K
      // blocks (the last partial), blocks of 6 rows and a remainder, a lone partial panel.
      {DType::kF32, 20, 300, 70, true},
      {DType::kF16, 16, 260, 70, true},
      {DType::kF16, 12, 129, 64, false},
      {DType::kBF16, 14, 301, 70, true},
      // Every remainder of the micro-kernel's blocks of 6 rows as one block, or (from 20 rows)
      // blocks of 5 and 6 that cover the rows exactly.
      {DType::kF32, 35, 70, 40, false},
      {DType::kF32, 37, 33, 32, true},
      {DType::kF16, 34, 20, 31, false},
      // Two full panels at once (AVX-512), each remainder of its 6-row blocks, a lone panel after
      // the pairs, full or partial, at every weight dtype.
      {DType::kF32, 43, 40, 100, false},
      {DType::kF32, 38, 300, 64, true},
      {DType::kF32, 45, 70, 96, true},
      {DType::kF16, 46, 20, 128, false},
      {DType::kF16, 41, 260, 70, true},
      {DType::kBF16, 42, 257, 64, false},
      {DType::kBF16, 5, 64, 96, true},
      // Chunks of more rows over few columns (an odd K keeps bf16 off the pair GEMM).
      {DType::kBF16, 50, 65, 96, true},
      {DType::kF16, 61, 40, 70, false},
      // An odd number of 64-column items over two threads: each item cut into slices of rows.
      {DType::kF32, 30, 40, 160, true},
      {DType::kF16, 50, 70, 300, false},
      {DType::kBF16, 128, 65, 576, true},
  };
  for (const LinearCase& c : cases) {
    SCOPED_TRACE(testing::Message() << dtype_name(c.weight) << " x[" << c.rows << ", " << c.inner << "] w[" << c.columns
                                    << ", " << c.inner << "]" << (c.bias ? " + bias" : ""));
    Tensor x = random_tensor(DType::kF32, {c.rows, c.inner}, rng);
    Tensor weight = random_tensor(c.weight, {c.columns, c.inner}, rng);
    Tensor bias = random_tensor(c.weight, {c.columns}, rng);
    std::vector<Tensor*> inputs = {&x, &weight};
    if (c.bias) {
      inputs.push_back(&bias);
    }
    expect_packed_conforms(GetParam(), OpKind::kLinear, inputs, {1}, {});
  }
}

// The fused projections: every part's columns in one split, parts of different widths (so the
// tiles and panels straddle part boundaries), with and without biases, decode and chunk rows.
TEST_P(CpuLinearTest, MultiLinearMatchesThePortableOne) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa;
  }
  std::mt19937 rng(23);
  struct Case {
    DType weight;
    int64_t rows;
    int64_t inner;
    std::vector<int64_t> columns;
    bool bias;
  };
  const std::vector<Case> cases = {
      {DType::kF32, 1, 72, {18, 6, 6}, false},
      {DType::kBF16, 1, 64, {9, 3, 3}, true},
      {DType::kF16, 1, 40, {33, 7}, false},
      {DType::kF32, 5, 33, {10, 3, 3}, true},
      {DType::kF32, 40, 300, {64, 33, 31}, true},
      {DType::kBF16, 36, 95, {70, 70}, false},  // odd K: the f32 GEMM, not the pair one
      {DType::kF16, 33, 50, {5, 40}, false},
      // A chunk of more rows than the others, over few columns.
      {DType::kF32, 49, 60, {64, 33, 31}, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << dtype_name(c.weight) << " rows " << c.rows << " inner " << c.inner << " parts "
                                    << c.columns.size() << (c.bias ? " + biases" : ""));
    Tensor x = random_tensor(DType::kF32, {c.rows, c.inner}, rng);
    std::vector<Tensor> weights, biases;
    for (int64_t columns : c.columns) {
      weights.push_back(random_tensor(c.weight, {columns, c.inner}, rng));
      biases.push_back(random_tensor(DType::kF32, {columns}, rng));
    }
    std::vector<Tensor*> inputs = {&x};
    for (Tensor& w : weights) {
      inputs.push_back(&w);
    }
    for (Tensor& b : biases) {
      if (c.bias) {
        inputs.push_back(&b);
      }
    }
    const Attributes parts{{"parts", static_cast<int64_t>(c.columns.size())}};
    std::vector<size_t> matrices;
    for (size_t p = 0; p < c.columns.size(); ++p) {
      matrices.push_back(1 + p);
    }
    expect_packed_conforms(GetParam(), OpKind::kMultiLinear, inputs, matrices, parts);
  }
}

// The residual added as each range of columns is done: decode and chunk rows, odd widths (a
// partial last panel), with and without a bias, every weight dtype.
TEST_P(CpuLinearTest, LinearAddMatchesThePortableOne) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa;
  }
  std::mt19937 rng(31);
  const std::vector<LinearCase> cases = {
      {DType::kF32, 1, 576, 37, false}, {DType::kBF16, 1, 65, 70, true},  {DType::kF16, 1, 40, 33, false},
      {DType::kF32, 5, 33, 9, true},    {DType::kF32, 40, 300, 97, true}, {DType::kBF16, 36, 95, 64, false},
      {DType::kF16, 33, 50, 45, false}, {DType::kF32, 53, 40, 70, true},  {DType::kBF16, 50, 65, 96, false},
      {DType::kF32, 36, 50, 150, true},  // three items, cut into slices of rows
  };
  for (const LinearCase& c : cases) {
    SCOPED_TRACE(testing::Message() << dtype_name(c.weight) << " x[" << c.rows << ", " << c.inner << "] w[" << c.columns
                                    << "]" << (c.bias ? " + bias" : ""));
    Tensor x = random_tensor(DType::kF32, {1, c.rows, c.inner}, rng);
    Tensor weight = random_tensor(c.weight, {c.columns, c.inner}, rng);
    Tensor residual = random_tensor(DType::kF32, {1, c.rows, c.columns}, rng);
    Tensor bias = random_tensor(c.weight, {c.columns}, rng);
    std::vector<Tensor*> inputs = {&x, &weight, &residual};
    if (c.bias) {
      inputs.push_back(&bias);
    }
    expect_packed_conforms(GetParam(), OpKind::kLinearAdd, inputs, {1}, {});
  }
}

// Gate and up two panels at a time, combined in cache: decode and chunk rows, widths that end in
// a partial panel or a lone panel, every weight dtype (an odd K keeps bf16 chunks off the pair
// GEMM).
TEST_P(CpuLinearTest, SwigluLinearMatchesThePortableOne) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa;
  }
  std::mt19937 rng(32);
  const std::vector<LinearCase> cases = {
      {DType::kF32, 1, 576, 100, false}, {DType::kBF16, 1, 64, 40, false},  {DType::kF16, 1, 33, 7, false},
      {DType::kF32, 3, 20, 64, false},   {DType::kF32, 40, 300, 70, false}, {DType::kBF16, 35, 95, 33, false},
      {DType::kF16, 33, 50, 96, false},  {DType::kF32, 7, 40, 160, false},  {DType::kBF16, 13, 64, 128, false},
  };
  for (const LinearCase& c : cases) {
    SCOPED_TRACE(testing::Message() << dtype_name(c.weight) << " x[" << c.rows << ", " << c.inner << "] w[" << c.columns
                                    << "]");
    Tensor x = random_tensor(DType::kF32, {1, c.rows, c.inner}, rng);
    Tensor gate = random_tensor(c.weight, {c.columns, c.inner}, rng);
    Tensor up = random_tensor(c.weight, {c.columns, c.inner}, rng);
    // silu(gate) * up multiplies two dot products (|gate|, |up| up to ~10 here), so each one's
    // rounding reaches the product scaled by the other: 1e-4 where a lone linear keeps 1e-5.
    expect_packed_conforms(GetParam(), OpKind::kSwigluLinear, {&x, &gate, &up}, {1, 2}, {}, 1e-4);
    expect_packed_conforms(GetParam(), OpKind::kGegluLinear, {&x, &gate, &up}, {1, 2}, {}, 1e-4);
  }
}

// Items that do not divide among the threads are cut into slices of rows, one per thread, each
// starting on a whole block of the GEMM's rows and together covering every row once.
TEST(CpuKernelsTest, RowSlicesSpreadAnOddItemCountInWholeBlocks) {
  // Blocks of 6 rows, as the AVX-512 and AVX2 float GEMMs run.
  EXPECT_EQ(cpu::row_slices(9, 128, 2, 6), 2);  // SmolLM's o_proj / down_proj
  EXPECT_EQ(cpu::row_slices(9, 128, 4, 6), 4);
  EXPECT_EQ(cpu::row_slices(24, 128, 2, 6), 1);  // already even
  EXPECT_EQ(cpu::row_slices(17, 128, 2, 6), 1);  // enough items that the last one's wait is small
  EXPECT_EQ(cpu::row_slices(9, 20, 2, 6), 1);    // too few rows to cut
  EXPECT_EQ(cpu::row_slices(9, 28, 2, 8), 1);    // too few for blocks of 8 ...
  EXPECT_EQ(cpu::row_slices(9, 28, 2, 6), 2);    // ... enough for blocks of 6
  EXPECT_EQ(cpu::row_slices(9, 128, 1, 6), 1);
  EXPECT_EQ(cpu::row_slices(9, 128, 2, 0), 1);  // an entry that cuts no slices
  // The float GEMM's blocks of 6 rows, the bf16 pair GEMM's 8 and the tiles' 16.
  for (const int64_t block : {6, 8, 16}) {
    for (const auto& [rows, slices] : std::vector<std::pair<int64_t, int64_t>>{{128, 2}, {128, 4}, {30, 2}, {49, 4}}) {
      SCOPED_TRACE(testing::Message() << rows << " rows in " << slices << " slices of blocks of " << block);
      EXPECT_EQ(cpu::slice_start(rows, slices, 0, block), 0);
      EXPECT_EQ(cpu::slice_start(rows, slices, slices, block), rows);
      for (int64_t s = 1; s < slices && (s + 1) * block <= rows; ++s) {
        const int64_t start = cpu::slice_start(rows, slices, s, block);
        EXPECT_EQ(start % block, 0);
        EXPECT_GT(start, cpu::slice_start(rows, slices, s - 1, block));
        EXPECT_LT(start, rows);
      }
    }
  }
  // Two slices of a 128-row chunk: 66 and 62 rows for the float GEMM (11 blocks and 10 blocks + 2
  // rows), 64 and 64 for the bf16 ones (a 66-row slice would end in a block of 2 rows).
  EXPECT_EQ(cpu::slice_start(128, 2, 1, 6), 66);
  EXPECT_EQ(cpu::slice_start(128, 2, 1, 8), 64);
  EXPECT_EQ(cpu::slice_start(128, 2, 1, 16), 64);
  // One slice (an entry that cuts none): every row, whatever the block.
  EXPECT_EQ(cpu::slice_start(128, 1, 0, 0), 0);
  EXPECT_EQ(cpu::slice_start(128, 1, 1, 0), 128);
}

TEST(CpuKernelsTest, MultiLinearWithMorePartsThanTheKernelBindsRunsPortable) {
  std::mt19937 rng(27);
  Tensor x = random_tensor(DType::kF32, {1, 16}, rng);
  std::vector<Tensor> weights;
  std::vector<Tensor*> inputs = {&x};
  for (int p = 0; p < 9; ++p) {
    weights.push_back(random_tensor(DType::kF32, {2, 16}, rng));
  }
  for (Tensor& w : weights) {
    inputs.push_back(&w);
  }
  std::vector<size_t> matrices;
  for (size_t p = 1; p <= weights.size(); ++p) {
    matrices.push_back(p);
  }
  const PackedNode node = pack_node(inputs, matrices, Attributes{{"parts", int64_t{9}}});
  std::string kernel_name;
  auto got =
      run_op_with(cpu_registry(), CpuFeatures::host(), OpKind::kMultiLinear, node.inputs, node.attrs, &kernel_name);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(kernel_name, "portable.multi_linear");
  EXPECT_EQ(got->size(), 9u);
}

TEST_P(CpuLinearTest, TakesLeadingDimensionsAsRows) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa;
  }
  std::mt19937 rng(22);
  Tensor x = random_tensor(DType::kF32, {2, 3, 20}, rng);
  Tensor weight = random_tensor(DType::kF32, {6, 20}, rng);
  expect_packed_conforms(GetParam(), OpKind::kLinear, {&x, &weight}, {1}, {});
}

TEST_P(CpuLinearTest, LeavesTheChunksPaddingRowsUnwritten) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa;
  }
  std::mt19937 rng(24);
  // Four padding rows leave a GEMM of 3; six leave one row, which the chunk's (GEMM) entry runs
  // as a GEMV, for each weight dtype (an odd K: a bf16 panel's last pair half empty).
  struct PaddingCase {
    DType weight;
    int64_t padding;
  };
  for (const PaddingCase c : {PaddingCase{DType::kF32, 4}, PaddingCase{DType::kF32, 6}, PaddingCase{DType::kF16, 6},
                              PaddingCase{DType::kBF16, 6}}) {
    SCOPED_TRACE(testing::Message() << dtype_name(c.weight) << ", " << c.padding << " padding rows");
    const int64_t rows = 7;
    const int64_t inner = 45;
    const int64_t padding = c.padding;
    Tensor x = random_tensor(DType::kF32, {rows, inner}, rng);
    Tensor weight = random_tensor(c.weight, {9, inner}, rng);
    Tensor bias = random_tensor(DType::kF32, {9}, rng);
    auto want = run_op(OpKind::kLinear, {&x, &weight, &bias});
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    const PackedNode node = pack_node({&x, &weight, &bias}, {1}, {});

    const TensorSpec x_spec{DType::kF32, {rows, inner}};
    const TensorSpec w_spec{c.weight, node.matrices[0].shape()};
    const TensorSpec b_spec{DType::kF32, {9}};
    const std::vector<const TensorSpec*> inputs = {&x_spec, &w_spec, &b_spec};
    const std::vector<TensorSpec> outputs = {{DType::kF32, {rows, 9}}};
    auto selected =
        cpu_registry().select({OpKind::kLinear, inputs, outputs, node.attrs}, *cpu_features_for_isa(GetParam().isa));
    ASSERT_TRUE(selected.ok()) << selected.status().to_string();
    EXPECT_EQ(selected->name.rfind(GetParam().prefix, 0), 0u) << "chose " << selected->name;
    std::vector<float> out(rows * 9, -123.0f);
    ThreadPool pool(2);
    const std::vector<TensorView> in_views = {x.view(), node.matrices[0].view(), bias.view()};
    const Shape out_shape = {rows, 9};
    const std::vector<TensorView> out_views = {TensorView(out.data(), DType::kF32, out_shape)};
    KernelContext context{&pool};
    context.chunk_rows = rows;
    context.padding_rows = padding;
    ASSERT_TRUE(selected->kernel->execute(in_views, out_views, context).ok());
    const std::vector<double> reference = to_doubles((*want)[0]);
    for (int64_t i = 0; i < rows * 9; ++i) {
      if (i < padding * 9) {
        EXPECT_EQ(out[static_cast<size_t>(i)], -123.0f) << "padding element " << i << " was written";
      } else {
        EXPECT_NEAR(out[static_cast<size_t>(i)], reference[static_cast<size_t>(i)], 1e-5) << "element " << i;
      }
    }
    // A linear whose rows are not the chunk's computes them all.
    context.chunk_rows = rows + 1;
    ASSERT_TRUE(selected->kernel->execute(in_views, out_views, context).ok());
    EXPECT_NEAR(out[0], reference[0], 1e-5);
  }
}

// The fused linears skip a chunk's padding rows like the linear: those rows of the output stay
// as they were, the real rows match the portable kernel, for a GEMM and a one-row remainder.
TEST_P(CpuLinearTest, FusedLinearsLeaveThePaddingRowsUnwritten) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa;
  }
  std::mt19937 rng(33);
  const int64_t rows = 7, inner = 45, columns = 40;
  for (OpKind op : {OpKind::kLinearAdd, OpKind::kSwigluLinear}) {
    for (int64_t padding : {int64_t{3}, int64_t{6}}) {
      SCOPED_TRACE(testing::Message() << op_name(op) << ", " << padding << " padding rows");
      Tensor x = random_tensor(DType::kF32, {rows, inner}, rng);
      Tensor weight = random_tensor(DType::kF32, {columns, inner}, rng);
      Tensor second = op == OpKind::kLinearAdd ? random_tensor(DType::kF32, {rows, columns}, rng)
                                               : random_tensor(DType::kF32, {columns, inner}, rng);
      auto want = run_op(op, {&x, &weight, &second});
      ASSERT_TRUE(want.ok()) << want.status().to_string();
      const std::vector<size_t> matrices =
          op == OpKind::kLinearAdd ? std::vector<size_t>{1} : std::vector<size_t>{1, 2};
      const PackedNode node = pack_node({&x, &weight, &second}, matrices, {});
      std::vector<TensorSpec> specs;
      for (Tensor* input : node.inputs) {
        specs.push_back({input->dtype(), Shape(input->shape().begin(), input->shape().end())});
      }
      const std::vector<const TensorSpec*> inputs = {&specs[0], &specs[1], &specs[2]};
      const std::vector<TensorSpec> outputs = {{DType::kF32, {rows, columns}}};
      auto selected = cpu_registry().select({op, inputs, outputs, node.attrs}, *cpu_features_for_isa(GetParam().isa));
      ASSERT_TRUE(selected.ok()) << selected.status().to_string();
      EXPECT_EQ(selected->name.rfind(GetParam().prefix, 0), 0u) << "chose " << selected->name;
      std::vector<float> out(static_cast<size_t>(rows * columns), -123.0f);
      ThreadPool pool(2);
      const std::vector<TensorView> in_views = {node.inputs[0]->view(), node.inputs[1]->view(), node.inputs[2]->view()};
      const Shape out_shape = {rows, columns};
      const std::vector<TensorView> out_views = {TensorView(out.data(), DType::kF32, out_shape)};
      KernelContext context{&pool};
      context.chunk_rows = rows;
      context.padding_rows = padding;
      ASSERT_TRUE(selected->kernel->execute(in_views, out_views, context).ok());
      const std::vector<double> reference = to_doubles((*want)[0]);
      for (int64_t i = 0; i < rows * columns; ++i) {
        if (i < padding * columns) {
          ASSERT_EQ(out[static_cast<size_t>(i)], -123.0f) << "padding element " << i << " was written";
        } else {
          ASSERT_NEAR(out[static_cast<size_t>(i)], reference[static_cast<size_t>(i)], 1e-4) << "element " << i;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuLinearTest, ::testing::ValuesIn(cpu_kernel_paths()), path_name);
// A build without native kernels has no path: NoNativePathMeansThePortableKernels checks it.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CpuLinearTest);

struct AttentionCase {
  DType cache;
  int64_t seq, query_heads, kv_heads, cache_len, head_dim;
  std::vector<int64_t> positions;  // -1: a padding row
};

class CpuAttentionTest : public ::testing::TestWithParam<IsaPath> {};

TEST_P(CpuAttentionTest, MatchesThePortableAttention) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa;
  }
  std::mt19937 rng(25);
  // Chunk rows from `first` on, after `padding` padding rows.
  const auto chunk = [](int64_t padding, int64_t first, int64_t rows) {
    std::vector<int64_t> positions(static_cast<size_t>(padding), -1);
    for (int64_t r = 0; r < rows; ++r) {
      positions.push_back(first + r);
    }
    return positions;
  };
  // Head dims below, at and off the vector widths; grouped and ungrouped heads; a decode row late
  // in the cache; a left-padded chunk; f32 and f16 caches; slot counts off the score blocks.
  const std::vector<AttentionCase> cases = {
      // Chunks of many tiles (a tile holds 16 or 32 query vectors): slots past
      // one block of 64 rows, a tile's queries at different positions, padding rows in tiles,
      // a partial last tile, head dims off the 8 kept in registers.
      {DType::kF32, 40, 9, 3, 100, 64, chunk(0, 60, 40)},
      {DType::kF16, 33, 8, 2, 80, 20, chunk(5, 0, 28)},
      {DType::kF32, 17, 32, 8, 40, 64, chunk(0, 0, 17)},
      {DType::kF16, 23, 6, 6, 150, 70, chunk(3, 120, 20)},
      {DType::kF32, 1, 9, 3, 64, 64, {40}},
      {DType::kF16, 1, 4, 4, 16, 20, {15}},
      {DType::kF32, 5, 6, 2, 12, 37, {-1, -1, 2, 3, 4}},
      // Any negative position pads, not only -1: a tile once masked from position + 1 backwards.
      {DType::kF32, 4, 4, 2, 64, 16, {-100, -5, 3, 4}},
      {DType::kF16, 4, 8, 1, 9, 8, {0, 1, 2, 8}},
      {DType::kF32, 3, 2, 1, 70, 130, {66, 67, 69}},
      // Decode rows with few groups and long caches: the slots split into runs merged by (max,
      // sum); a group of 10 heads (weighted sums in passes of 8); a padding row among split ones.
      {DType::kF32, 1, 10, 1, 1024, 64, {900}},
      {DType::kF16, 1, 8, 2, 600, 40, {599}},
      {DType::kF32, 2, 4, 1, 400, 64, {-1, 300}},
      // Decode rows over head dims the score blocks know at compile time (32, 64, 128, 256: 4, 8
      // or 16 registers on one ISA or the other) and off them, with groups whose weighted sums
      // take slices of 4, 2 or 1 registers (and a partial last one).
      {DType::kF32, 1, 7, 1, 200, 100, {150}},
      {DType::kF16, 1, 12, 2, 300, 128, {257}},
      {DType::kF32, 1, 3, 1, 50, 256, {49}},
      {DType::kF32, 1, 5, 1, 70, 32, {69}},
      // q8_0 caches: tiles widened a block of rows at a time, decode runs over the codes in
      // registers, summed in chunks of 64 rows (a run of 200 slots, a split one of 900, a short
      // one), head dims of one to eight blocks.
      {DType::kQ8_0, 40, 9, 3, 100, 64, chunk(0, 60, 40)},
      {DType::kQ8_0, 23, 6, 6, 150, 32, chunk(3, 120, 20)},
      {DType::kQ8_0, 1, 7, 1, 250, 128, {200}},
      {DType::kQ8_0, 1, 10, 1, 1024, 64, {900}},
      {DType::kQ8_0, 1, 4, 2, 16, 256, {15}},
  };
  for (const AttentionCase& c : cases) {
    SCOPED_TRACE(testing::Message() << dtype_name(c.cache) << " seq " << c.seq << " heads " << c.query_heads << "/"
                                    << c.kv_heads << " cache " << c.cache_len << " dim " << c.head_dim);
    Tensor q = random_tensor(DType::kF32, {1, c.seq, c.query_heads, c.head_dim}, rng);
    Tensor k = random_tensor(c.cache, {1, c.kv_heads, c.cache_len, c.head_dim}, rng);
    Tensor v = random_tensor(c.cache, {1, c.kv_heads, c.cache_len, c.head_dim}, rng);
    Tensor positions = portable_test::index_tensor(DType::kI64, c.positions);
    expect_conforms(GetParam(), OpKind::kAttention, {&q, &k, &v, &positions}, {}, 1e-5, 1e-6);
  }
}

// windowed_attention on the same kernels: a window shorter than most rows' histories, so tiles
// start past their first slot and their queries' windows start at different slots; a window of 1;
// one longer than the cache (plain attention); decode rows whose window splits into runs; Gemma
// 2's soft-cap on the scores; padding rows among windowed ones.
TEST_P(CpuAttentionTest, MatchesThePortableWindowedAttention) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa;
  }
  std::mt19937 rng(27);
  struct WindowedCase {
    AttentionCase shape;
    int64_t window;
    double softcap;
  };
  std::vector<int64_t> rows(40);
  std::iota(rows.begin(), rows.end(), 60);
  std::vector<int64_t> padded = {-1, -1, -1};
  for (int64_t r = 0; r < 28; ++r) {
    padded.push_back(r);
  }
  const std::vector<WindowedCase> cases = {
      {{DType::kF32, 40, 9, 3, 100, 64, rows}, 7, 0.0},    {{DType::kF16, 40, 8, 2, 100, 20, rows}, 33, 0.5},
      {{DType::kF32, 31, 4, 2, 64, 16, padded}, 5, 0.0},   {{DType::kF32, 31, 4, 2, 64, 16, padded}, 1, 3.0},
      {{DType::kF16, 40, 9, 3, 100, 64, rows}, 200, 0.0},  {{DType::kF32, 1, 10, 1, 1024, 64, {900}}, 512, 0.0},
      {{DType::kF16, 1, 8, 2, 600, 40, {599}}, 300, 30.0}, {{DType::kF32, 2, 4, 1, 400, 64, {-1, 300}}, 257, 0.0},
      {{DType::kF32, 1, 4, 2, 64, 16, {3}}, 8, 0.0},       {{DType::kF32, 4, 4, 2, 64, 16, {-100, -5, 30, 31}}, 4, 1.5},
      {{DType::kQ8_0, 40, 8, 2, 100, 32, rows}, 33, 0.5},  {{DType::kQ8_0, 1, 8, 2, 600, 64, {599}}, 300, 30.0},
  };
  for (const WindowedCase& c : cases) {
    const AttentionCase& a = c.shape;
    SCOPED_TRACE(testing::Message() << dtype_name(a.cache) << " seq " << a.seq << " heads " << a.query_heads << "/"
                                    << a.kv_heads << " cache " << a.cache_len << " dim " << a.head_dim << " window "
                                    << c.window << " softcap " << c.softcap);
    Tensor q = random_tensor(DType::kF32, {1, a.seq, a.query_heads, a.head_dim}, rng);
    Tensor k = random_tensor(a.cache, {1, a.kv_heads, a.cache_len, a.head_dim}, rng);
    Tensor v = random_tensor(a.cache, {1, a.kv_heads, a.cache_len, a.head_dim}, rng);
    Tensor positions = portable_test::index_tensor(DType::kI64, a.positions);
    expect_conforms(GetParam(), OpKind::kWindowedAttention, {&q, &k, &v, &positions},
                    {{"window", c.window}, {"softcap", c.softcap}}, 1e-5, 1e-6);
  }
}

TEST_P(CpuAttentionTest, RefusesAPositionPastTheCache) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa;
  }
  std::mt19937 rng(26);
  Tensor q = random_tensor(DType::kF32, {1, 2, 2, 16}, rng);
  Tensor k = random_tensor(DType::kF32, {1, 1, 8, 16}, rng);
  Tensor positions = portable_test::index_tensor(DType::kI32, {3, 8});
  std::string kernel_name;
  auto got = run_op_with(cpu_registry(), *cpu_features_for_isa(GetParam().isa), OpKind::kAttention,
                         {&q, &k, &k, &positions}, {}, &kernel_name);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(kernel_name.rfind(GetParam().prefix, 0), 0u) << kernel_name;
  EXPECT_EQ(got.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(got.status().message().find("attention: position 8 at row 1 is outside the cache length 8"),
            std::string::npos)
      << got.status().message();
}

// A left-padded chunk's padding rows are not computed: most of a chunk (the first tiles of one
// query vector per head), a few rows (part of a tile), all but one row, on an f16 cache.
TEST_P(CpuAttentionTest, LeavesTheChunksPaddingRowsUnwritten) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa;
  }
  std::mt19937 rng(28);
  struct PaddedCase {
    DType cache;
    int64_t seq, query_heads, kv_heads, head_dim, padding, first_position;
  };
  for (const PaddedCase& c : {PaddedCase{DType::kF32, 40, 9, 3, 64, 30, 0}, PaddedCase{DType::kF32, 40, 9, 3, 64, 3, 5},
                              PaddedCase{DType::kF16, 17, 8, 2, 20, 16, 7}}) {
    SCOPED_TRACE(testing::Message() << dtype_name(c.cache) << " seq " << c.seq << ", " << c.padding << " padding rows");
    const int64_t cache_len = 64;
    Tensor q = random_tensor(DType::kF32, {1, c.seq, c.query_heads, c.head_dim}, rng);
    Tensor k = random_tensor(c.cache, {1, c.kv_heads, cache_len, c.head_dim}, rng);
    Tensor v = random_tensor(c.cache, {1, c.kv_heads, cache_len, c.head_dim}, rng);
    std::vector<int64_t> at(static_cast<size_t>(c.padding), -1);
    for (int64_t r = c.padding; r < c.seq; ++r) {
      at.push_back(c.first_position + r - c.padding);
    }
    Tensor positions = portable_test::index_tensor(DType::kI32, at);
    expect_padding_rows_skipped(GetParam(), OpKind::kAttention, {&q, &k, &v, &positions}, {}, c.seq, c.padding, 1e-5);
    expect_padding_rows_skipped(GetParam(), OpKind::kWindowedAttention, {&q, &k, &v, &positions},
                                {{"window", int64_t{6}}, {"softcap", 2.0}}, c.seq, c.padding, 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuAttentionTest, ::testing::ValuesIn(cpu_kernel_paths()), path_name);
// A build without native kernels has no path: NoNativePathMeansThePortableKernels checks it.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CpuAttentionTest);

TEST(CpuKernelsTest, QuantizedWeightsFallBackToPortable) {
  KernelRegistry registry;
  ASSERT_TRUE(register_cpu_kernels(registry).ok());
  const TensorSpec x{DType::kF32, {1, 32}};
  const TensorSpec weight{DType::kQ8_0, {4, 32}};
  const std::vector<TensorSpec> outputs = {{DType::kF32, {1, 4}}};
  const Attributes none;
  const std::vector<const TensorSpec*> inputs = {&x, &weight};
  auto selected = registry.select(KernelSignature{OpKind::kLinear, inputs, outputs, none}, CpuFeatures::all());
  ASSERT_TRUE(selected.ok()) << selected.status().to_string();
  EXPECT_EQ(selected->name, "portable.linear");
}

// A weight in rows (a program exported before pack_weights, or by another backend's passes) is
// declined by the cpu linear and runs on the portable one, with the same result.
TEST(CpuKernelsTest, WeightsInRowsRunOnThePortableLinear) {
  std::mt19937 rng(29);
  Tensor x = random_tensor(DType::kF32, {3, 24}, rng);
  Tensor weight = random_tensor(DType::kF16, {5, 24}, rng);
  std::string kernel_name;
  auto got = run_op_with(cpu_registry(), CpuFeatures::host(), OpKind::kLinear, {&x, &weight}, {}, &kernel_name);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(kernel_name, "portable.linear");
}

// The portable kernels read panel32 too (a packed node the partitioner left undelegated, a tied
// embedding that shares the output projection's packed table): the same result as from rows,
// exactly, since only the addressing differs.
TEST(CpuKernelsTest, PortableKernelsReadPackedMatricesAsRows) {
  std::mt19937 rng(30);
  const auto portable = cpu_features_for_isa("portable");
  ASSERT_TRUE(portable.ok());
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor x = random_tensor(DType::kF32, {4, 37}, rng);
    Tensor weight = random_tensor(dtype, {45, 37}, rng);
    const PackedNode linear = pack_node({&x, &weight}, {1}, {});
    auto want = run_op(OpKind::kLinear, {&x, &weight});
    auto got = run_op_with(cpu_registry(), *portable, OpKind::kLinear, linear.inputs, linear.attrs);
    ASSERT_TRUE(want.ok() && got.ok());
    EXPECT_EQ(to_doubles((*got)[0]), to_doubles((*want)[0]));

    // Enough ids for the gather to split over the test pool's two threads; the first three are
    // the last row of the padded second panel, the first row and the first panel's last lane.
    Tensor ids = Tensor::zeros(DType::kI32, {40}).value();
    const int32_t edges[] = {44, 0, 31};
    std::uniform_int_distribution<int32_t> any_row(0, 44);
    for (int64_t i = 0; i < 40; ++i) {
      ids.data<int32_t>()[i] = i < 3 ? edges[i] : any_row(rng);
    }
    const PackedNode embedding = pack_node({&weight, &ids}, {0}, {});
    auto want_rows = run_op(OpKind::kEmbedding, {&weight, &ids});
    auto got_rows = run_op_with(cpu_registry(), *portable, OpKind::kEmbedding, embedding.inputs, embedding.attrs);
    ASSERT_TRUE(want_rows.ok() && got_rows.ok());
    EXPECT_EQ(to_doubles((*got_rows)[0]), to_doubles((*want_rows)[0]));
  }
}

// Every op the cpu backend takes runs on a native kernel of this build's widest path the host has,
// or, where the build has none (no native kernels for this architecture), on the portable kernel:
// the registry falls through to it, so such a build still runs everything.
TEST(CpuKernelsTest, NoNativePathMeansThePortableKernels) {
  std::mt19937 rng(32);
  Tensor x = random_tensor(DType::kF32, {3, 40}, rng);
  Tensor weight = random_tensor(DType::kF32, {33, 40}, rng);
  Tensor norm_weight = random_tensor(DType::kF32, {40}, rng);
  const PackedNode linear = pack_node({&x, &weight}, {1}, {});
  const IsaPath* widest = nullptr;
  for (const IsaPath& path : cpu_kernel_paths()) {
    if (widest == nullptr && host_has(path)) {
      widest = &path;
    }
  }
  SCOPED_TRACE(testing::Message() << "native kernels: " << cpu_kernel_arch()
                                  << ", host: " << CpuFeatures::host().to_string());
  const struct {
    OpKind op;
    std::vector<Tensor*> inputs;
    Attributes attrs;
  } cases[] = {{OpKind::kLinear, linear.inputs, linear.attrs},
               {OpKind::kAdd, {&x, &x}, {}},
               {OpKind::kSwiglu, {&x, &x}, {}},
               {OpKind::kRmsNorm, {&x, &norm_weight}, Attributes{{"eps", 1e-5}}}};
  for (const auto& c : cases) {
    SCOPED_TRACE(op_name(c.op));
    std::string kernel_name;
    auto got = run_op_with(cpu_registry(), CpuFeatures::host(), c.op, c.inputs, c.attrs, &kernel_name);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    const std::string want = widest != nullptr ? widest->prefix : "portable.";
    EXPECT_EQ(kernel_name.rfind(want, 0), 0u) << "chose " << kernel_name;
    // The oracle reads the linear's weight in rows.
    auto reference = c.op == OpKind::kLinear ? run_op(c.op, {&x, &weight}) : run_op(c.op, c.inputs, c.attrs);
    ASSERT_TRUE(reference.ok()) << reference.status().to_string();
    expect_close((*got)[0], to_doubles((*reference)[0]), 1e-5, 1e-5);
  }
  if (cpu_kernel_arch() == "generic") {
    EXPECT_TRUE(cpu_kernel_paths().empty());
  }
}

TEST(CpuKernelsTest, PortableIsaChoosesPortableKernels) {
  auto features = cpu_features_for_isa("portable");
  ASSERT_TRUE(features.ok());
  std::mt19937 rng(23);
  Tensor x = random_tensor(DType::kF32, {1, 16}, rng);
  Tensor weight = random_tensor(DType::kF32, {4, 16}, rng);
  const PackedNode node = pack_node({&x, &weight}, {1}, {});
  std::string kernel_name;
  auto got = run_op_with(cpu_registry(), *features, OpKind::kLinear, node.inputs, node.attrs, &kernel_name);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(kernel_name, "portable.linear");
}

}  // namespace
}  // namespace staticlm
