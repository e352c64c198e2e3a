// SPDX-License-Identifier: Apache-2.0
// What the cpu backend's kernel conformance tests share: this build's ISA paths, the registry,
// weights packed as the backend's pack_weights pass stores them, and the check that the cpu
// kernel of a path was chosen and matches the portable kernel.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/backends/cpu/kernels/register.h"
#include "staticlm/backends/portable/kernel_test_util.h"
#include "staticlm/ops/weight_layout.h"
#include "staticlm/runtime/kernel_registry.h"

namespace staticlm::cpu_test {

// An instruction-set path of this build's native kernels (register.h): its `isa` cap, the prefix
// of its kernels' names, the features it needs.
using IsaPath = CpuKernelPath;

// The name of a path in a parameterized test's name.
inline std::string path_name(const ::testing::TestParamInfo<IsaPath>& param) {
  return param.param.isa;
}

inline const KernelRegistry& cpu_registry() {
  static const KernelRegistry* registry = [] {
    auto* made = new KernelRegistry();
    EXPECT_TRUE(register_cpu_kernels(*made).ok());
    return made;
  }();
  return *registry;
}

// `rows` ([N, K]) in the panel32 layout, as the cpu backend's pack_weights pass stores it.
inline Tensor packed(const Tensor& rows) {
  const PanelLayout layout = PanelLayout::of(rows.shape()[0], rows.shape()[1], rows.dtype());
  Tensor out = Tensor::zeros(rows.dtype(), layout.packed_shape()).value();
  pack_panels(rows.bytes(), dtype_info(rows.dtype()).block_bytes, layout, out.bytes());
  return out;
}

// A linear-family node's inputs with the matrices at `matrices` packed, and its attributes
// saying so.
struct PackedNode {
  std::vector<Tensor> matrices;
  std::vector<Tensor*> inputs;
  Attributes attrs;
};

inline PackedNode pack_node(const std::vector<Tensor*>& inputs, const std::vector<size_t>& matrices, Attributes attrs) {
  PackedNode node;
  node.inputs = inputs;
  node.matrices.reserve(matrices.size());
  std::vector<int64_t> shapes;
  for (size_t m : matrices) {
    node.matrices.push_back(packed(*inputs[m]));
    node.inputs[m] = &node.matrices.back();
    shapes.push_back(inputs[m]->shape()[0]);
    shapes.push_back(inputs[m]->shape()[1]);
  }
  attrs.set(std::string(kWeightLayoutAttr), std::string(kPanel32Layout));
  attrs.set(std::string(kWeightShapesAttr), shapes);
  node.attrs = std::move(attrs);
  return node;
}

// Runs `op` on the portable kernel over `want_inputs` and on the cpu kernel of `path` over
// `inputs`; expects the cpu kernel to be chosen and its outputs within the tolerance of the
// portable ones.
inline void expect_conforms(const IsaPath& path, OpKind op, const std::vector<Tensor*>& want_inputs,
                            const Attributes& want_attrs, const std::vector<Tensor*>& inputs, const Attributes& attrs,
                            double rel_tol, double abs_tol) {
  auto want = portable_test::run_op(op, want_inputs, want_attrs);
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  auto features = cpu_features_for_isa(path.isa);
  ASSERT_TRUE(features.ok());
  std::string kernel_name;
  auto got = portable_test::run_op_with(cpu_registry(), *features, op, inputs, attrs, &kernel_name);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(kernel_name.rfind(path.prefix, 0), 0u) << "chose " << kernel_name;
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < got->size(); ++i) {
    portable_test::expect_close((*got)[i], portable_test::to_doubles((*want)[i]), rel_tol, abs_tol);
  }
}

inline void expect_conforms(const IsaPath& path, OpKind op, const std::vector<Tensor*>& inputs, const Attributes& attrs,
                            double rel_tol, double abs_tol) {
  expect_conforms(path, op, inputs, attrs, inputs, attrs, rel_tol, abs_tol);
}

// The linear family: the portable kernel on the weights in rows (the oracle: no packing in it)
// against the cpu kernel on the same weights packed.
// Only the summation order differs: a few ulps of the dot product's magnitude, by default.
inline void expect_packed_conforms(const IsaPath& path, OpKind op, const std::vector<Tensor*>& inputs,
                                   const std::vector<size_t>& matrices, const Attributes& attrs,
                                   double tolerance = 1e-5) {
  const PackedNode node = pack_node(inputs, matrices, attrs);
  expect_conforms(path, op, inputs, attrs, node.inputs, node.attrs, tolerance, tolerance);
}

// What a left-padded chunk's outputs start filled with (portable_test::ChunkPadding::fill), so a
// test sees which elements a kernel left unwritten.
inline constexpr float kUnwritten = -123.0f;

// Expects the first `padding` of the `rows` rows of `got` left unwritten (kUnwritten) and the
// others within `tolerance` of `want`'s (relative to 1 + |want|; `want` computes every row).
inline void expect_padding_rows_unwritten(const Tensor& got, const Tensor& want, int64_t rows, int64_t padding,
                                          double tolerance) {
  const std::vector<double> values = portable_test::to_doubles(got);
  const std::vector<double> reference = portable_test::to_doubles(want);
  ASSERT_EQ(values.size(), reference.size());
  const size_t per_row = values.size() / static_cast<size_t>(rows);
  for (size_t i = 0; i < values.size(); ++i) {
    if (i < static_cast<size_t>(padding) * per_row) {
      ASSERT_EQ(values[i], kUnwritten) << "padding element " << i << " was written";
    } else {
      ASSERT_NEAR(values[i], reference[i], tolerance * (1.0 + std::fabs(reference[i]))) << "element " << i;
    }
  }
}

// Runs `op` on the cpu kernel of `path` as a chunk of `rows` rows whose first `padding` are the
// chunk's padding (KernelContext), and expects those rows of output 0 left unwritten and the
// others within `tolerance` of the portable kernel's, which computes every row.
inline void expect_padding_rows_skipped(const IsaPath& path, OpKind op, const std::vector<Tensor*>& inputs,
                                        const Attributes& attrs, int64_t rows, int64_t padding, double tolerance) {
  auto want = portable_test::run_op(op, inputs, attrs);
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  std::string kernel_name;
  auto got = portable_test::run_op_with(cpu_registry(), *cpu_features_for_isa(path.isa), op, inputs, attrs,
                                        &kernel_name, {rows, padding, kUnwritten});
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(kernel_name.rfind(path.prefix, 0), 0u) << "chose " << kernel_name;
  expect_padding_rows_unwritten((*got)[0], (*want)[0], rows, padding, tolerance);
}

inline bool host_has(const IsaPath& path) {
  return CpuFeatures::host().covers(path.needs);
}

}  // namespace staticlm::cpu_test
