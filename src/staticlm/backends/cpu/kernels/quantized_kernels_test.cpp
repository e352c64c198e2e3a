// SPDX-License-Identifier: Apache-2.0
// The int8 / int4 linear kernels of this build's architecture: on every integer path this machine
// has (x86: AMX int8 tiles, VNNI, AVX-VNNI, the AVX2 integer path; AArch64: smmla, sdot, the plain
// NEON widening multiplies), equal bit for bit to a scalar reference of the scheme they implement (x
// quantized per group, integer dot products, one float multiply-add per group), and so to each
// other, and within the bound activation quantization allows of the portable kernel on the
// dequantized weights (the oracle: f32 x times d * q). Odd sizes, every group size, decode and
// chunk rows, padding rows, and the fused linears.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/backends/cpu/kernels/quantized_rows.h"
#include "staticlm/backends/cpu/kernels/register.h"
#include "staticlm/backends/portable/kernel_test_util.h"
#include "staticlm/core/half.h"
#include "staticlm/core/thread_pool.h"
#include "staticlm/ops/panel_quant.h"
#include "staticlm/ops/weight_layout.h"

namespace staticlm {
namespace {

using portable_test::random_tensor;
using portable_test::run_op;
using portable_test::run_op_with;
using portable_test::to_doubles;

const KernelRegistry& registry() {
  static const KernelRegistry* made = [] {
    auto* r = new KernelRegistry();
    EXPECT_TRUE(register_cpu_kernels(*r).ok());
    return r;
  }();
  return *made;
}

// An integer path: the features that select it, and the name of the kernel it runs for an op.
struct QuantPath {
  const char* name;
  CpuFeatures features;
  const char* kernel_prefix;  // the kernel's name is prefix + op + suffix
  const char* kernel_suffix;
};

std::string kernel_of(const QuantPath& path, OpKind op) {
  return str_cat(path.kernel_prefix, op_name(op), path.kernel_suffix);
}

// The paths this build's architecture has, widest first (a CPU without a path's features skips
// it): on x86, AMX where the process has the tiles (its chunk GEMM, tdpbsud, must equal the VNNI
// kernel's), VNNI, AVX-VNNI on an AVX2 core, the AVX2 integer path; on AArch64, smmla, sdot
// and the plain NEON path.
std::vector<QuantPath> all_paths() {
  if (cpu_kernel_arch() == "x86") {
    const CpuFeatures avx2 = CpuFeatures().with(CpuFeature::kAvx2);
    const CpuFeatures avx512 = avx2.with(CpuFeature::kAvx512);
    const CpuFeatures vnni = avx512.with(CpuFeature::kAvx512Vnni);
    return {{"amx_int8", vnni.with(CpuFeature::kAmxInt8), "cpu.avx512.", "_amx_int8"},
            {"vnni", vnni, "cpu.avx512.", "_vnni"},
            {"avx_vnni", avx2.with(CpuFeature::kAvxVnni), "cpu.avx2.", "_vnni"},
            {"avx2", avx2, "cpu.avx2.", ""}};
  }
  if (cpu_kernel_arch() == "arm") {
    const CpuFeatures neon = CpuFeatures().with(CpuFeature::kNeon);
    const CpuFeatures dotprod = neon.with(CpuFeature::kNeonDotProd);
    return {{"i8mm", dotprod.with(CpuFeature::kNeonI8mm), "cpu.neon.", "_i8mm"},
            {"dotprod", dotprod, "cpu.neon.", "_dotprod"},
            {"neon", neon, "cpu.neon.", ""}};
  }
  return {};
}

std::string quant_path_name(const ::testing::TestParamInfo<QuantPath>& param) {
  return param.param.name;
}

void PrintTo(const QuantPath& path, std::ostream* out) {
  *out << path.name;
}

class QuantizedKernelsTest : public ::testing::TestWithParam<QuantPath> {
 protected:
  void SetUp() override {
    if (!CpuFeatures::host().covers(GetParam().features)) {
      GTEST_SKIP() << "this CPU has no " << GetParam().name << " (it has: " << CpuFeatures::host().to_string() << ")";
    }
  }
};

Tensor copy_of(const Tensor& t) {
  Tensor out = Tensor::zeros(t.dtype(), Shape(t.shape().begin(), t.shape().end())).value();
  std::memcpy(out.bytes().data(), t.bytes().data(), t.bytes().size());
  return out;
}

// A quantized matrix and the node attributes that say so.
struct QuantMatrix {
  Tensor packed;
  PanelLayout layout;
};

QuantMatrix quantize(const Tensor& rows, PanelCodes codes, int64_t group) {
  QuantMatrix out{Tensor(), PanelLayout::quantized(rows.shape()[0], rows.shape()[1], codes, group)};
  out.packed = Tensor::zeros(DType::kU8, out.layout.packed_shape()).value();
  const auto* data = rows.data<float>();
  EXPECT_TRUE(quantize_panels({data, static_cast<size_t>(rows.numel())}, out.layout, out.packed.bytes(), "w").ok());
  return out;
}

Attributes quant_attrs(const std::vector<const QuantMatrix*>& matrices, Attributes attrs = {}) {
  std::vector<int64_t> shapes;
  for (const QuantMatrix* m : matrices) {
    shapes.push_back(m->layout.rows);
    shapes.push_back(m->layout.cols);
  }
  attrs.set(std::string(kWeightLayoutAttr), std::string(panel_layout_name(matrices[0]->layout.codes)));
  attrs.set(std::string(kWeightShapesAttr), shapes);
  attrs.set(std::string(kWeightGroupAttr), matrices[0]->layout.group);
  return attrs;
}

// Code q (offset removed) and scale d of lane n, k value k.
int32_t code_of(const QuantMatrix& m, int64_t n, int64_t k) {
  const PanelLayout& l = m.layout;
  const uint8_t* group =
      m.packed.data<uint8_t>() + (n / kPanelWidth) * l.panel_elements() + (k / l.group) * l.group_units();
  const uint8_t byte = group[kPanelScaleBytes + code_byte(l.codes, n % kPanelWidth, k % l.group)];
  const int32_t stored =
      l.codes == PanelCodes::kInt8 ? byte : (code_in_high_nibble(k % l.group) ? byte >> 4 : byte & 15);
  return stored - code_offset(l.codes);
}
float scale_of(const QuantMatrix& m, int64_t n, int64_t group) {
  const PanelLayout& l = m.layout;
  const uint8_t* start = m.packed.data<uint8_t>() + (n / kPanelWidth) * l.panel_elements() + group * l.group_units();
  uint16_t bits = 0;
  std::memcpy(&bits, start + 2 * (n % kPanelWidth), 2);
  return f16_to_f32(bits);
}

// The scheme in scalar code: per group, the exact integer dot product of the codes, then
// acc = fma(dot, d * dx, acc), in group order; the bias after.
std::vector<float> reference(const Tensor& x, const QuantMatrix& w, const Tensor* bias) {
  const int64_t inner = w.layout.cols;
  const int64_t rows = x.numel() / inner;
  cpu::QuantizedRows xq;
  cpu::quantize_rows(x.data<float>(), rows, inner, w.layout.group, xq);
  std::vector<float> out(static_cast<size_t>(rows * w.layout.rows));
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t n = 0; n < w.layout.rows; ++n) {
      float acc = 0.0f;
      for (int64_t gi = 0; gi < xq.groups; ++gi) {
        int32_t dot = 0;
        for (int64_t k = gi * xq.group; k < std::min(inner, (gi + 1) * xq.group); ++k) {
          dot += code_of(w, n, k) * xq.codes(m)[k];
        }
        acc = std::fma(static_cast<float>(dot), scale_of(w, n, gi) * xq.row_scales(m)[gi], acc);
      }
      if (bias != nullptr) {
        acc += bias->data<float>()[n];
      }
      out[static_cast<size_t>(m * w.layout.rows + n)] = acc;
    }
  }
  return out;
}

// What activation quantization may move a result from the f32-x oracle: each x code is off by at
// most half its group's step dx / 2, so |error| <= sum_k |d q_k| dx_k / 2 (plus float rounding).
std::vector<double> quantization_bound(const Tensor& x, const QuantMatrix& w) {
  const int64_t inner = w.layout.cols;
  const int64_t rows = x.numel() / inner;
  cpu::QuantizedRows xq;
  cpu::quantize_rows(x.data<float>(), rows, inner, w.layout.group, xq);
  std::vector<double> bound(static_cast<size_t>(rows * w.layout.rows));
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t n = 0; n < w.layout.rows; ++n) {
      double sum = 0.0;
      for (int64_t k = 0; k < inner; ++k) {
        sum += std::fabs(scale_of(w, n, k / w.layout.group) * static_cast<float>(code_of(w, n, k))) *
               xq.row_scales(m)[k / w.layout.group] / 2;
      }
      bound[static_cast<size_t>(m * w.layout.rows + n)] = sum * 1.001 + 1e-5;
    }
  }
  return bound;
}

struct QuantCase {
  PanelCodes codes;
  int64_t group;
  int64_t rows;
  int64_t inner;
  int64_t columns;
  bool bias;
};

TEST_P(QuantizedKernelsTest, EveryPathEqualsTheSchemeAndStaysWithinTheBoundOfThePortableKernel) {
  const QuantPath& path = GetParam();
  std::mt19937 rng(51);
  // Decode rows and chunks (blocks of 8 / 2 rows and their remainders), K off the group (a
  // partial last group), N off the panel, every group size, a bias. The AMX tiles take int8
  // calls from 5 rows and int4 from 33 in blocks of 16 rows, groups of 16 to 64 k in one step
  // and of 128 in two, and int4 in spans of the groups the scratch holds (35 of 32 k, 63 of 16 k:
  // two spans each). smmla takes calls from 33 rows in pairs of rows, an odd last one on sdot;
  // sdot's chunks from 33 rows (int4's from 17) copy spans into the scratch (1000 k in groups of
  // 32: two).
  const std::vector<QuantCase> cases = {
      {PanelCodes::kInt8, 32, 1, 576, 100, false},   {PanelCodes::kInt4, 32, 1, 576, 64, true},
      {PanelCodes::kInt8, 16, 1, 40, 33, false},     {PanelCodes::kInt4, 128, 1, 300, 31, false},
      {PanelCodes::kInt8, 64, 3, 130, 40, true},     {PanelCodes::kInt4, 16, 5, 72, 70, false},
      {PanelCodes::kInt8, 128, 19, 256, 64, false},  {PanelCodes::kInt4, 64, 13, 200, 45, true},
      {PanelCodes::kInt8, 32, 40, 100, 96, false},   {PanelCodes::kInt4, 32, 33, 64, 32, false},
      {PanelCodes::kInt8, 32, 17, 96, 64, false},    {PanelCodes::kInt8, 128, 70, 300, 50, true},
      {PanelCodes::kInt4, 32, 66, 1100, 40, false},  {PanelCodes::kInt4, 16, 35, 1000, 33, true},
      {PanelCodes::kInt8, 16, 100, 120, 130, false}, {PanelCodes::kInt4, 128, 48, 520, 64, false},
      {PanelCodes::kInt8, 64, 7, 200, 64, true},     {PanelCodes::kInt8, 64, 37, 130, 40, false},
      {PanelCodes::kInt8, 32, 34, 1000, 40, true},   {PanelCodes::kInt4, 32, 21, 200, 40, true},
      {PanelCodes::kInt8, 64, 1, 200, 70, true},     {PanelCodes::kInt4, 16, 1, 72, 40, false},
  };
  for (const QuantCase& c : cases) {
    SCOPED_TRACE(testing::Message() << panel_layout_name(c.codes) << " g" << c.group << " x[" << c.rows << ", "
                                    << c.inner << "] w[" << c.columns << "]" << (c.bias ? " + bias" : ""));
    Tensor x = random_tensor(DType::kF32, {c.rows, c.inner}, rng);
    // One outlier per row: a per-token scale would flatten the rest of the row.
    x.data<float>()[0] = 20.0f;
    Tensor weight = random_tensor(DType::kF32, {c.columns, c.inner}, rng);
    Tensor bias = random_tensor(DType::kF32, {c.columns}, rng);
    const QuantMatrix w = quantize(weight, c.codes, c.group);
    Tensor packed = copy_of(w.packed);
    const Attributes attrs = quant_attrs({&w});
    std::vector<Tensor*> inputs = {&x, &packed};
    if (c.bias) {
      inputs.push_back(&bias);
    }
    const std::vector<float> scheme = reference(x, w, c.bias ? &bias : nullptr);
    auto oracle = run_op(OpKind::kLinear, inputs, attrs);
    ASSERT_TRUE(oracle.ok()) << oracle.status().to_string();
    const std::vector<double> want = to_doubles((*oracle)[0]);
    const std::vector<double> bound = quantization_bound(x, w);
    std::string kernel;
    auto got = run_op_with(registry(), path.features, OpKind::kLinear, inputs, attrs, &kernel);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_EQ(kernel, kernel_of(path, OpKind::kLinear));
    const float* out = (*got)[0].data<float>();
    for (size_t i = 0; i < scheme.size(); ++i) {
      ASSERT_EQ(out[i], scheme[i]) << "element " << i;
      ASSERT_LE(std::fabs(out[i] - want[i]), bound[i]) << "element " << i << " against the portable kernel";
    }
  }
}

// The fused linears run the same integer path: x quantized once for all parts, the residual and
// the swiglu applied after. Each equals, bit for bit, its parts run on the same path: the
// quantized linear, then the cpu add / swiglu.
TEST_P(QuantizedKernelsTest, TheFusedLinearsEqualTheirPartsOnTheSamePath) {
  const QuantPath& path = GetParam();
  std::mt19937 rng(52);
  for (int64_t rows : {int64_t{1}, int64_t{9}}) {
    SCOPED_TRACE(testing::Message() << rows << " rows");
    Tensor x = random_tensor(DType::kF32, {1, rows, 96}, rng);
    Tensor residual = random_tensor(DType::kF32, {1, rows, 40}, rng);
    const QuantMatrix a = quantize(random_tensor(DType::kF32, {40, 96}, rng), PanelCodes::kInt4, 32);
    const QuantMatrix b = quantize(random_tensor(DType::kF32, {40, 96}, rng), PanelCodes::kInt4, 32);
    Tensor pa = copy_of(a.packed), pb = copy_of(b.packed);
    auto run = [&](OpKind op, const std::vector<Tensor*>& inputs, const Attributes& attrs) {
      std::string kernel;
      auto got = run_op_with(registry(), path.features, op, inputs, attrs, &kernel);
      EXPECT_TRUE(got.ok()) << got.status().to_string();
      // The add and the swiglu are the instruction set's elementwise kernels.
      const bool elementwise = op == OpKind::kAdd || op == OpKind::kSwiglu;
      EXPECT_EQ(kernel, elementwise ? str_cat(path.kernel_prefix, op_name(op)) : kernel_of(path, op));
      return got.ok() ? std::move(*got) : std::vector<Tensor>();
    };
    std::vector<Tensor> gate = run(OpKind::kLinear, {&x, &pa}, quant_attrs({&a}));
    std::vector<Tensor> up = run(OpKind::kLinear, {&x, &pb}, quant_attrs({&b}));
    ASSERT_EQ(gate.size(), 1u);
    ASSERT_EQ(up.size(), 1u);
    auto expect_equal = [](const Tensor& got, const Tensor& want) {
      ASSERT_EQ(got.numel(), want.numel());
      for (int64_t i = 0; i < got.numel(); ++i) {
        ASSERT_EQ(got.data<float>()[i], want.data<float>()[i]) << "element " << i;
      }
    };
    std::vector<Tensor> added = run(OpKind::kAdd, {&residual, &gate[0]}, {});
    std::vector<Tensor> swiglu = run(OpKind::kSwiglu, {&gate[0], &up[0]}, {});
    expect_equal(run(OpKind::kLinearAdd, {&x, &pa, &residual}, quant_attrs({&a})).at(0), added.at(0));
    expect_equal(run(OpKind::kSwigluLinear, {&x, &pa, &pb}, quant_attrs({&a, &b})).at(0), swiglu.at(0));
    std::vector<Tensor> parts =
        run(OpKind::kMultiLinear, {&x, &pa, &pb}, quant_attrs({&a, &b}, Attributes{{"parts", int64_t{2}}}));
    ASSERT_EQ(parts.size(), 2u);
    expect_equal(parts[0], gate[0]);
    expect_equal(parts[1], up[0]);
  }
}

// A chunk's padding rows are skipped on the quantized path too, and x is quantized from its
// first real row.
TEST_P(QuantizedKernelsTest, PaddingRowsAreNotComputed) {
  const QuantPath& path = GetParam();
  std::mt19937 rng(53);
  const int64_t rows = 6, padding = 2, inner = 64, columns = 32;
  Tensor x = random_tensor(DType::kF32, {rows, inner}, rng);
  const QuantMatrix w = quantize(random_tensor(DType::kF32, {columns, inner}, rng), PanelCodes::kInt4, 32);
  const std::vector<float> scheme = reference(x, w, nullptr);
  const Attributes attrs = quant_attrs({&w});
  const TensorSpec x_spec{DType::kF32, {rows, inner}};
  const TensorSpec w_spec{DType::kU8, w.layout.packed_shape()};
  const std::vector<const TensorSpec*> specs = {&x_spec, &w_spec};
  const std::vector<TensorSpec> outputs = {{DType::kF32, {rows, columns}}};
  auto selected = registry().select({OpKind::kLinear, specs, outputs, attrs}, path.features);
  ASSERT_TRUE(selected.ok()) << selected.status().to_string();
  EXPECT_EQ(selected->name, kernel_of(path, OpKind::kLinear));
  std::vector<float> out(static_cast<size_t>(rows * columns), -123.0f);
  const Shape out_shape = {rows, columns};
  Tensor packed = copy_of(w.packed);
  const std::vector<TensorView> in_views = {x.view(), packed.view()};
  const std::vector<TensorView> out_views = {TensorView(out.data(), DType::kF32, out_shape)};
  ThreadPool pool(2);
  KernelContext context{&pool};
  context.chunk_rows = rows;
  context.padding_rows = padding;
  ASSERT_TRUE(selected->kernel->execute(in_views, out_views, context).ok());
  for (int64_t i = 0; i < rows * columns; ++i) {
    // The real rows' x codes are their own (each row quantized alone), so they equal the
    // whole chunk's reference.
    ASSERT_EQ(out[static_cast<size_t>(i)], i < padding * columns ? -123.0f : scheme[static_cast<size_t>(i)]) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, QuantizedKernelsTest, ::testing::ValuesIn(all_paths()), quant_path_name);
// A build without native kernels has no integer path.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(QuantizedKernelsTest);

}  // namespace
}  // namespace staticlm
