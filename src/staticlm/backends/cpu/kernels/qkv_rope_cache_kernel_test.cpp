// SPDX-License-Identifier: Apache-2.0
// The q / k / v projections with rope and the cache writes (qkv_rope_cache) and the decode GEMV
// they share with every linear, against the portable kernels, on each instruction-set path this
// machine has.
#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/backends/cpu/kernels/cpu_conformance_util.h"
#include "staticlm/core/thread_pool.h"
#include "staticlm/ops/op_set.h"

namespace staticlm {
namespace {

using cpu_test::cpu_registry;
using cpu_test::expect_conforms;
using cpu_test::host_has;
using cpu_test::IsaPath;
using cpu_test::pack_node;
using cpu_test::PackedNode;
using cpu_test::path_name;
using portable_test::random_tensor;

class CpuQkvTest : public ::testing::TestWithParam<IsaPath> {};

// A panel's sums in the GEMV do not depend on whether it streams alone or beside another, nor on
// how the columns are split over threads: 1, 2 and 4 threads give the same bits (a multi_linear
// whose parts start mid-range, and ranges of an odd number of panels, included).
TEST_P(CpuQkvTest, TheGemvGivesTheSameBitsOnAnyNumberOfThreads) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa;
  }
  std::mt19937 rng(36);
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const int64_t inner = 520;
    const std::vector<int64_t> widths = {290, 96, 33};  // 10, 3 and 2 panels, the last ones partial
    Tensor x = random_tensor(DType::kF32, {1, 1, inner}, rng);
    std::vector<Tensor> weights;
    for (int64_t width : widths) {
      weights.push_back(random_tensor(dtype, {width, inner}, rng));
    }
    const PackedNode node = pack_node({&x, &weights[0], &weights[1], &weights[2]}, {1, 2, 3}, {{"parts", int64_t{3}}});
    std::vector<TensorSpec> specs;
    for (Tensor* input : node.inputs) {
      specs.push_back({input->dtype(), Shape(input->shape().begin(), input->shape().end())});
    }
    std::vector<const TensorSpec*> spec_ptrs;
    for (const TensorSpec& spec : specs) spec_ptrs.push_back(&spec);
    std::vector<TensorSpec> outputs;
    for (int64_t width : widths) outputs.push_back({DType::kF32, {1, 1, width}});
    auto selected = cpu_registry().select({OpKind::kMultiLinear, spec_ptrs, outputs, node.attrs},
                                          *cpu_features_for_isa(GetParam().isa));
    ASSERT_TRUE(selected.ok()) << selected.status().to_string();
    EXPECT_EQ(selected->name.rfind(GetParam().prefix, 0), 0u) << "chose " << selected->name;
    std::vector<TensorView> in_views;
    for (Tensor* input : node.inputs) in_views.push_back(input->view());
    std::vector<std::vector<float>> first;
    for (int threads : {1, 2, 4}) {
      std::vector<std::vector<float>> results;
      std::vector<TensorView> out_views;
      for (const TensorSpec& spec : outputs) {
        results.emplace_back(static_cast<size_t>(num_elements(spec.shape)));
      }
      for (size_t i = 0; i < outputs.size(); ++i) {
        out_views.emplace_back(results[i].data(), DType::kF32, outputs[i].shape);
      }
      ThreadPool pool(threads);
      const KernelContext context{&pool};
      ASSERT_TRUE(selected->kernel->execute(in_views, out_views, context).ok());
      if (first.empty()) {
        first = results;
      } else {
        EXPECT_EQ(results, first) << threads << " threads";
      }
    }
  }
}

struct QkvCase {
  DType weight;
  DType cache;
  int64_t rows;
  int64_t inner;
  int64_t q_heads;
  int64_t kv_heads;
  int64_t head_dim;
  bool bias;
  std::vector<int64_t> positions;  // one per row; negative: padding
};

// The cases' inputs: x, the three weights, both caches (random, so untouched slots show), the
// positions, and the biases where the case has them.
struct QkvInputs {
  std::vector<Tensor> tensors;
  std::vector<Tensor*> inputs;
};

QkvInputs qkv_inputs(const QkvCase& c, std::mt19937& rng) {
  QkvInputs out;
  const int64_t cache_len = 13;
  out.tensors.reserve(10);
  out.tensors.push_back(random_tensor(DType::kF32, {1, c.rows, c.inner}, rng));
  for (int64_t heads : {c.q_heads, c.kv_heads, c.kv_heads}) {
    out.tensors.push_back(random_tensor(c.weight, {heads * c.head_dim, c.inner}, rng));
  }
  for (int i = 0; i < 2; ++i) {
    out.tensors.push_back(random_tensor(c.cache, {1, c.kv_heads, cache_len, c.head_dim}, rng));
  }
  Tensor positions = Tensor::zeros(DType::kI64, {c.rows}).value();
  std::copy(c.positions.begin(), c.positions.end(), positions.data<int64_t>());
  out.tensors.push_back(std::move(positions));
  if (c.bias) {
    for (int64_t heads : {c.q_heads, c.kv_heads, c.kv_heads}) {
      out.tensors.push_back(random_tensor(DType::kBF16, {heads * c.head_dim}, rng));
    }
  }
  for (Tensor& tensor : out.tensors) {
    out.inputs.push_back(&tensor);
  }
  return out;
}

// q / k / v with rope and the cache writes against the portable composition of the ops it
// replaces: the rotated queries and both whole caches (rows written and rows left), decode and
// chunk rows, padding rows, f32 / f16 caches, every weight dtype, heads of one, two and three
// panels, GQA, biases.
TEST_P(CpuQkvTest, QkvRopeCacheMatchesThePortableOne) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa;
  }
  std::mt19937 rng(34);
  const std::vector<QkvCase> cases = {
      {DType::kF32, DType::kF32, 1, 72, 3, 1, 64, false, {12}},
      {DType::kBF16, DType::kF16, 1, 64, 4, 2, 32, true, {0}},
      {DType::kF16, DType::kF32, 1, 40, 2, 2, 96, false, {5}},
      {DType::kF32, DType::kF16, 7, 45, 6, 2, 64, true, {-1, -1, 2, 3, 4, 5, 6}},
      {DType::kBF16, DType::kF32, 9, 64, 2, 1, 128, false, {0, 1, 2, 3, 4, 5, 6, 7, 8}},
      {DType::kF32, DType::kF32, 36, 33, 2, 1, 32, true, std::vector<int64_t>(36, 3)},
      // An odd number of heads over a chunk: each head cut into slices of rows (every real row
      // its own slot, so the order of the writes cannot matter).
      {DType::kF32, DType::kF16, 30, 40, 3, 1, 32, true, std::vector<int64_t>(30, -1)},
      {DType::kBF16, DType::kF32, 26, 64, 5, 2, 32, false, std::vector<int64_t>(26, -1)},
  };
  for (QkvCase c : cases) {
    if (c.rows == 36) {
      for (int64_t r = 0; r < c.rows; ++r) c.positions[static_cast<size_t>(r)] = r % 13 - 1;  // some padding
    }
    if (c.rows == 30 || c.rows == 26) {  // padding, then slots 0-12
      for (int64_t r = c.rows - 13; r < c.rows; ++r) c.positions[static_cast<size_t>(r)] = r - (c.rows - 13);
    }
    SCOPED_TRACE(testing::Message() << dtype_name(c.weight) << " weights, " << dtype_name(c.cache) << " caches, rows "
                                    << c.rows << ", heads " << c.q_heads << "/" << c.kv_heads << " x " << c.head_dim
                                    << (c.bias ? ", biases" : ""));
    QkvInputs in = qkv_inputs(c, rng);
    const Attributes rope{{"theta", 10000.0}};
    // Each run updates its caches in place: the cpu kernel gets its own copies, so a slot it
    // fails to write keeps the original value, not the one the portable run wrote.
    PackedNode node = pack_node(in.inputs, {1, 2, 3}, rope);
    std::vector<Tensor> own_caches;
    for (size_t i : {size_t{4}, size_t{5}}) {
      own_caches.push_back(Tensor::zeros(in.tensors[i].dtype(), in.tensors[i].shape()).value());
      std::copy(in.tensors[i].bytes().begin(), in.tensors[i].bytes().end(), own_caches.back().bytes().begin());
    }
    node.inputs[4] = &own_caches[0];
    node.inputs[5] = &own_caches[1];
    expect_conforms(GetParam(), OpKind::kQkvRopeCache, in.inputs, rope, node.inputs, node.attrs, 1e-4, 1e-4);
  }
}

// A chunk's padding rows: no query row or cache slot is written for them; a position past the
// cache fails before either cache is touched.
TEST_P(CpuQkvTest, QkvRopeCacheSkipsPaddingAndRefusesABadPosition) {
  if (!host_has(GetParam())) {
    GTEST_SKIP() << "this CPU has no " << GetParam().isa;
  }
  std::mt19937 rng(35);
  const QkvCase c{DType::kF32, DType::kF32, 5, 40, 2, 1, 32, false, {-1, -1, 0, 1, 2}};
  QkvInputs in = qkv_inputs(c, rng);
  const Attributes rope{{"theta", 10000.0}};
  const PackedNode node = pack_node(in.inputs, {1, 2, 3}, rope);
  std::vector<TensorSpec> specs;
  for (Tensor* input : node.inputs) {
    specs.push_back({input->dtype(), Shape(input->shape().begin(), input->shape().end())});
  }
  std::vector<const TensorSpec*> spec_ptrs;
  for (const TensorSpec& spec : specs) spec_ptrs.push_back(&spec);
  auto inferred = infer_outputs(OpKind::kQkvRopeCache, spec_ptrs, node.attrs);
  ASSERT_TRUE(inferred.ok()) << inferred.status().to_string();
  auto selected = cpu_registry().select({OpKind::kQkvRopeCache, spec_ptrs, *inferred, node.attrs},
                                        *cpu_features_for_isa(GetParam().isa));
  ASSERT_TRUE(selected.ok()) << selected.status().to_string();
  EXPECT_EQ(selected->name.rfind(GetParam().prefix, 0), 0u) << "chose " << selected->name;

  auto snapshot = [](const Tensor& t) { return std::vector<uint8_t>(t.bytes().begin(), t.bytes().end()); };
  const std::vector<uint8_t> keys_before = snapshot(in.tensors[4]);
  const std::vector<uint8_t> values_before = snapshot(in.tensors[5]);
  const int64_t q_width = c.q_heads * c.head_dim;
  std::vector<float> queries(static_cast<size_t>(c.rows * q_width), -123.0f);
  const Shape q_shape = (*inferred)[0].shape;
  std::vector<TensorView> in_views;
  for (Tensor* input : node.inputs) in_views.push_back(input->view());
  const std::vector<TensorView> out_views = {TensorView(queries.data(), DType::kF32, q_shape), in_views[4],
                                             in_views[5]};
  ThreadPool pool(2);
  KernelContext context{&pool};
  context.chunk_rows = c.rows;
  context.padding_rows = 2;
  ASSERT_TRUE(selected->kernel->execute(in_views, out_views, context).ok());
  for (int64_t i = 0; i < 2 * q_width; ++i) {
    ASSERT_EQ(queries[static_cast<size_t>(i)], -123.0f) << "padding query element " << i << " was written";
  }
  // Slots 0-2 were written (one kv head: slot p is bytes [p, p + 1) x head_dim floats); the
  // others keep what the caches held.
  const size_t written = static_cast<size_t>(3 * c.head_dim) * sizeof(float);
  for (const auto& [after, before] :
       {std::pair(snapshot(in.tensors[4]), keys_before), std::pair(snapshot(in.tensors[5]), values_before)}) {
    EXPECT_FALSE(std::equal(after.begin(), after.begin() + written, before.begin()));
    EXPECT_TRUE(std::equal(after.begin() + written, after.end(), before.begin() + written));
  }

  const std::vector<uint8_t> keys_written = snapshot(in.tensors[4]);
  const std::vector<uint8_t> values_written = snapshot(in.tensors[5]);
  in.tensors[6].data<int64_t>()[4] = 13;  // the cache holds 13 slots
  const Status bad = selected->kernel->execute(in_views, out_views, context);
  EXPECT_EQ(bad.code(), StatusCode::kOutOfRange) << bad.to_string();
  EXPECT_NE(bad.message().find("position 13"), std::string::npos) << bad.message();
  EXPECT_EQ(snapshot(in.tensors[4]), keys_written);
  EXPECT_EQ(snapshot(in.tensors[5]), values_written);
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuQkvTest, ::testing::ValuesIn(cpu_kernel_paths()), path_name);
// A build without native kernels has no path (cpu_kernels_test.cpp's
// NoNativePathMeansThePortableKernels checks that build).
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CpuQkvTest);

}  // namespace
}  // namespace staticlm
