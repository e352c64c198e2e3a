// SPDX-License-Identifier: Apache-2.0
// The cpu backend: its passes fuse silu * up into swiglu and the linears of one input into
// multi_linear; preprocess lowers a partition into a
// method blob whose weights are named data; the runtime side verifies the blob against the call
// and the named data it is given, refuses what does not match or is corrupt, and runs it.
#include "staticlm/backends/cpu/export/cpu_backend.h"

#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "staticlm/backends/cpu/export/epilogue_fusion.h"
#include "staticlm/backends/cpu/export/matrix_formats.h"
#include "staticlm/backends/cpu/export/multi_linear_fusion.h"
#include "staticlm/backends/cpu/export/pack_weights_pass.h"
#include "staticlm/backends/cpu/export/qkv_rope_cache_fusion.h"
#include "staticlm/backends/cpu/export/swiglu_fusion.h"
#include "staticlm/backends/cpu/export/weight_dtype_pass.h"
#include "staticlm/backends/cpu/kernels/machine_peaks.h"
#include "staticlm/backends/cpu/kernels/register.h"
#include "staticlm/backends/cpu/runtime/cpu_runtime.h"
#include "staticlm/core/half.h"
#include "staticlm/core/thread_pool.h"
#include "staticlm/format/method_blob.h"
#include "staticlm/graph/verifier.h"
#include "staticlm/ops/weight_layout.h"
#include "staticlm/runtime/named_data_test_util.h"

namespace staticlm {
namespace {

// sub(x, cache, rows, positions; w): y = silu(x) * x; h = linear(y, w);
// cache' = kv_cache_update(cache, rows, positions) (in place); outputs h and y.
struct TestGraph {
  std::unique_ptr<Graph> graph;
  std::vector<float> weights;
};

TestGraph test_graph() {
  TestGraph out;
  auto constants = std::make_shared<ConstantTable>();
  out.weights.resize(12);
  for (size_t i = 0; i < out.weights.size(); ++i) out.weights[i] = 0.1f * static_cast<float>(i) - 0.5f;
  std::vector<uint8_t> bytes(out.weights.size() * 4);
  std::memcpy(bytes.data(), out.weights.data(), bytes.size());
  const ConstantId w_id = *constants->add("w", DType::kF32, {3, 4}, make_owned_source(std::move(bytes)));
  out.graph = std::make_unique<Graph>(constants);
  Graph& g = *out.graph;
  ValueId x = *g.add_input("x", DType::kF32, {2, 4});
  ValueId cache = *g.add_input("cache", DType::kF32, {1, 1, 4, 2});
  ValueId rows = *g.add_input("rows", DType::kF32, {1, 1, 1, 2});
  ValueId positions = *g.add_input("positions", DType::kI32, {1});
  ValueId w = *g.use_constant(w_id);
  ValueId s = *g.add(OpKind::kSilu, {x});
  ValueId y = *g.add(OpKind::kMul, {s, x});
  ValueId h = *g.add(OpKind::kLinear, {y, w});
  (void)*g.add(OpKind::kKvCacheUpdate, {cache, rows, positions});
  EXPECT_TRUE(g.add_output("h", h).ok());
  EXPECT_TRUE(g.add_output("y", y).ok());
  return out;
}

std::vector<TensorSpec> call_inputs() {
  return {{DType::kF32, {2, 4}}, {DType::kF32, {1, 1, 4, 2}}, {DType::kF32, {1, 1, 1, 2}}, {DType::kI32, {1}}};
}

using testing::MemoryNamedData;

struct Exported {
  DelegatePayload payload;
  std::vector<uint8_t> blob;
  MemoryNamedData named_data;
};

// Nodes `nodes` of `graph` preprocessed as one partition.
Exported export_partition(const Graph& graph, std::vector<int32_t> nodes) {
  Exported out;
  auto backend = CpuBackend::create();
  EXPECT_TRUE(backend.ok());
  auto resolved = resolve_options((*backend)->option_schema(), {}, {});
  EXPECT_TRUE(resolved.ok());
  PartitionSubgraph partition{"forward", 0, &graph, std::move(nodes)};
  auto payload = (*backend)->preprocess(partition, *resolved);
  EXPECT_TRUE(payload.ok()) << payload.status().to_string();
  if (!payload.ok()) return out;
  out.payload = std::move(payload).value();
  out.blob.resize(out.payload.blob->size_bytes());
  EXPECT_TRUE(out.payload.blob->read(out.blob).ok());
  for (const NamedDataSpec& entry : out.payload.named_data) {
    std::vector<uint8_t> bytes(entry.source->size_bytes());
    EXPECT_TRUE(entry.source->read(bytes).ok());
    out.named_data.put(entry.key, bytes);
  }
  return out;
}

Exported export_test_graph(TestGraph& t) {
  return export_partition(*t.graph, {0, 1, 2, 3});
}

struct Runtime {
  std::shared_ptr<CpuBackendRuntime> runtime = *CpuBackendRuntime::create();
  ResolvedOptions options;

  explicit Runtime(const OptionMap& given = {}) {
    auto resolved = resolve_options(runtime->runtime_options(), given, {});
    EXPECT_TRUE(resolved.ok()) << resolved.status().to_string();
    if (resolved.ok()) options = *resolved;
  }
  Result<std::unique_ptr<DelegateHandle>> init(std::span<const uint8_t> blob, std::span<const TensorSpec> inputs,
                                               const NamedDataMap& named_data) const {
    DelegateInit init;
    init.blob = blob;
    init.inputs = inputs;
    init.named_data = &named_data;
    init.options = &options;
    return runtime->init(init);
  }
};

void expect_refused(const Status& status, std::string_view expected) {
  ASSERT_FALSE(status.ok()) << "expected a refusal containing: " << expected;
  EXPECT_NE(status.message().find(expected), std::string::npos) << status.message();
}

TEST(CpuBackendTest, TheFusionPassTurnsSiluTimesUpIntoSwiglu) {
  TestGraph t = test_graph();
  SwigluFusion pass;
  ASSERT_TRUE(pass.run(*t.graph).ok());
  ASSERT_TRUE(verify_graph(*t.graph).ok()) << verify_graph(*t.graph).to_string();
  ASSERT_EQ(t.graph->nodes().size(), 3u);
  EXPECT_EQ(t.graph->nodes()[0].op, OpKind::kSwiglu);
  EXPECT_EQ(t.graph->nodes()[0].inputs[0], t.graph->inputs()[0].value);
  // A silu read twice stays.
  Graph shared(std::make_shared<ConstantTable>());
  ValueId x = *shared.add_input("x", DType::kF32, {4});
  ValueId s = *shared.add(OpKind::kSilu, {x});
  ValueId m = *shared.add(OpKind::kMul, {s, x});
  ASSERT_TRUE(shared.add_output("m", m).ok());
  ASSERT_TRUE(shared.add_output("s", s).ok());
  ASSERT_TRUE(pass.run(shared).ok());
  EXPECT_EQ(shared.nodes().size(), 2u);
  EXPECT_EQ(shared.nodes()[1].op, OpKind::kMul);
}

// Gemma's GeGLU: mul(gelu(gate, approximate=tanh), up) becomes geglu; the erf gelu stays as it
// is (no fused kernel computes it).
TEST(CpuBackendTest, TheFusionPassTurnsATanhGeluTimesUpIntoGeglu) {
  for (const char* approximate : {"tanh", "none"}) {
    SCOPED_TRACE(approximate);
    Graph g(std::make_shared<ConstantTable>());
    ValueId gate = *g.add_input("gate", DType::kF32, {2, 8});
    ValueId up = *g.add_input("up", DType::kF32, {2, 8});
    ValueId activated = *g.add(OpKind::kGelu, {gate}, {{"approximate", std::string(approximate)}});
    ASSERT_TRUE(g.add_output("out", *g.add(OpKind::kMul, {up, activated})).ok());
    ASSERT_TRUE(SwigluFusion().run(g).ok());
    ASSERT_TRUE(verify_graph(g).ok());
    if (std::string_view(approximate) == "tanh") {
      ASSERT_EQ(g.nodes().size(), 1u);
      EXPECT_EQ(g.nodes()[0].op, OpKind::kGeglu);
      EXPECT_EQ(g.nodes()[0].inputs, (std::vector<ValueId>{gate, up}));
    } else {
      EXPECT_EQ(g.nodes().size(), 2u);
    }
  }
}

TEST(CpuBackendTest, PreprocessStoresWeightsAsNamedDataAndTheBlobIsAMethod) {
  TestGraph t = test_graph();
  Exported e = export_test_graph(t);
  ASSERT_EQ(e.payload.named_data.size(), 1u);
  EXPECT_EQ(e.payload.named_data[0].key, "cpu/w");
  EXPECT_EQ(e.payload.named_data[0].source->size_bytes(), 48u);
  EXPECT_TRUE(e.payload.runtime_constants.empty()) << "weights are named data, not call inputs";
  auto method = read_method_blob(e.blob);
  ASSERT_TRUE(method.ok()) << method.status().to_string();
  EXPECT_EQ((*method)->inputs()->size(), 4u);
  EXPECT_EQ((*method)->outputs()->size(), 2u);
  EXPECT_TRUE((*method)->inputs()->Get(1)->mutable_()) << "the cache is updated in place";
}

TEST(CpuBackendTest, ExecutesThePartitionAndUpdatesTheCacheInPlace) {
  TestGraph t = test_graph();
  Exported e = export_test_graph(t);
  Runtime runtime;
  const std::vector<TensorSpec> inputs = call_inputs();
  auto handle = runtime.init(e.blob, inputs, e.named_data);
  ASSERT_TRUE(handle.ok()) << handle.status().to_string();
  EXPECT_EQ((*handle)->updated_inputs().size(), 1u);
  ASSERT_EQ((*handle)->output_specs().size(), 2u);
  EXPECT_EQ((*handle)->output_specs()[0], (TensorSpec{DType::kF32, {2, 3}}));

  std::vector<float> x = {-2, -1, 0, 1, 2, 3, 4, 5};
  std::vector<float> cache(8, 0.0f);
  std::vector<float> rows = {7, 8};
  std::vector<int32_t> positions = {2};
  std::vector<float> h(6, NAN);
  std::vector<float> y(8, NAN);
  const std::vector<TensorView> in = {TensorView(x.data(), DType::kF32, inputs[0].shape),
                                      TensorView(cache.data(), DType::kF32, inputs[1].shape),
                                      TensorView(rows.data(), DType::kF32, inputs[2].shape),
                                      TensorView(positions.data(), DType::kI32, inputs[3].shape)};
  const Shape h_shape = {2, 3};
  const Shape y_shape = {2, 4};
  const std::vector<TensorView> out = {TensorView(h.data(), DType::kF32, h_shape),
                                       TensorView(y.data(), DType::kF32, y_shape)};
  auto instance = (*handle)->new_instance();
  ASSERT_TRUE(instance.ok());
  ThreadPool pool(1);
  ASSERT_TRUE((*instance)->execute(in, out, KernelContext{&pool}).ok());
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_NEAR(y[i], x[i] / (1.0f + std::exp(-x[i])) * x[i], 1e-5) << i;
  }
  for (size_t r = 0; r < 2; ++r) {
    for (size_t n = 0; n < 3; ++n) {
      float expected = 0.0f;
      for (size_t k = 0; k < 4; ++k) expected += y[r * 4 + k] * t.weights[n * 4 + k];
      EXPECT_NEAR(h[r * 3 + n], expected, 1e-5) << r << "," << n;
    }
  }
  EXPECT_EQ(cache[4], 7.0f);  // slot 2 of the one head: elements 4 and 5
  EXPECT_EQ(cache[5], 8.0f);
  EXPECT_EQ(cache[0], 0.0f);
}

TEST(CpuBackendTest, RefusesACallOrNamedDataThatDoesNotMatch) {
  TestGraph t = test_graph();
  Exported e = export_test_graph(t);
  Runtime runtime;
  std::vector<TensorSpec> wrong_shape = call_inputs();
  wrong_shape[0].shape = {2, 5};
  expect_refused(runtime.init(e.blob, wrong_shape, e.named_data).status(),
                 "cpu delegate: blob input 0 'x' is f32[2,4], the call passes f32[2,5]");
  std::vector<TensorSpec> fewer = call_inputs();
  fewer.pop_back();
  expect_refused(runtime.init(e.blob, fewer, e.named_data).status(), "the blob has 4 inputs, the call passes 3");
  MemoryNamedData empty;
  expect_refused(runtime.init(e.blob, call_inputs(), empty).status(), "named data 'cpu/w' is not in the test map");
  MemoryNamedData short_weights;
  const std::vector<uint8_t> half(24, 0);
  short_weights.put("cpu/w", half);
  expect_refused(runtime.init(e.blob, call_inputs(), short_weights).status(),
                 "needs 48 bytes, named data 'cpu/w' holds 24");
}

TEST(CpuBackendTest, RefusesBytesThatAreNotAMethodBlob) {
  TestGraph t = test_graph();
  Exported e = export_test_graph(t);
  Runtime runtime;
  const std::vector<TensorSpec> inputs = call_inputs();
  expect_refused(runtime.init({}, inputs, e.named_data).status(), "not a method blob");
  const std::vector<uint8_t> garbage(64, 0x5a);
  expect_refused(runtime.init(garbage, inputs, e.named_data).status(), "not a method blob");
  std::vector<uint8_t> truncated = e.blob;
  truncated.resize(truncated.size() / 2);
  auto handle = runtime.init(truncated, inputs, e.named_data);
  ASSERT_FALSE(handle.ok());
  EXPECT_EQ(handle.status().code(), StatusCode::kDataLoss) << handle.status().to_string();
}

TEST(CpuBackendTest, CorruptedBlobsAreRefusedOrRunSafely) {
  TestGraph t = test_graph();
  Exported e = export_test_graph(t);
  Runtime runtime;
  const std::vector<TensorSpec> inputs = call_inputs();
  std::mt19937 rng(11);
  int accepted = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> bytes = e.blob;
    for (int flips = 1 + static_cast<int>(rng() % 4); flips > 0; --flips) {
      bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    }
    // Either outcome is fine; what matters (under the sanitizers) is that verifying is safe and
    // that a blob which is accepted gives a delegate whose sessions can be made.
    auto handle = runtime.init(bytes, inputs, e.named_data);
    if (handle.ok()) {
      ++accepted;
      EXPECT_TRUE((*handle)->new_instance().ok());
    }
  }
  EXPECT_LT(accepted, 2000);
}

TEST(CpuBackendTest, TheIsaRuntimeOptionIsValidated) {
  OptionMap given;
  // A typo of this architecture's widest cap (avx512, i8mm; portable where it has none).
  const std::string widest(isa_caps()[1].name);
  given.emplace("isa", RawOptionValue::text(widest + "x"));
  auto runtime = *CpuBackendRuntime::create();
  auto resolved = resolve_options(runtime->runtime_options(), given, {});
  expect_refused(resolved.status(), "did you mean '" + widest + "'?");
  OptionMap portable;
  portable.emplace("isa", RawOptionValue::text("portable"));
  Runtime capped(portable);
  TestGraph t = test_graph();
  Exported e = export_test_graph(t);
  EXPECT_TRUE(capped.init(e.blob, call_inputs(), e.named_data).ok());
}

ValueId constant_value(Graph& g, const std::string& name, Shape shape) {
  std::vector<uint8_t> bytes(static_cast<size_t>(num_elements(shape)) * 4, 0);
  const ConstantId id = *g.mutable_constants().add(name, DType::kF32, std::move(shape), make_owned_source(bytes));
  return *g.use_constant(id);
}

// Whether `node` names an entry the cpu backend's registry has for its op.
bool registered(const KernelRegistry& registry, const NodeKernel& node) {
  auto op = find_op(node.op);
  if (!op.ok()) return false;
  for (const KernelEntry* entry : registry.kernels_of(*op)) {
    if (entry->name == node.kernel) return true;
  }
  return false;
}

// What `staticlm inspect --kernels` prints: each node's kernel, an entry of the registry for its
// op; each native path the host runs gives the nodes its own kernels, isa=portable the portable ones.
TEST(CpuBackendTest, ReportsTheKernelOfEveryNode) {
  KernelRegistry registry;
  ASSERT_TRUE(register_cpu_kernels(registry).ok());
  // rms_norm and add: ops every native path has a kernel for.
  Graph g(std::make_shared<ConstantTable>());
  ValueId x = *g.add_input("x", DType::kF32, {2, 16});
  ValueId normed = *g.add(OpKind::kRmsNorm, {x, constant_value(g, "norm", {16})});
  ASSERT_TRUE(g.add_output("y", *g.add(OpKind::kAdd, {normed, x})).ok());
  Exported e = export_partition(g, {0, 1});
  const std::vector<TensorSpec> inputs = {{DType::kF32, {2, 16}}};
  auto report_at = [&](const char* isa) {
    OptionMap given;
    given.emplace("isa", RawOptionValue::text(isa));
    auto handle = Runtime(given).init(e.blob, inputs, e.named_data);
    EXPECT_TRUE(handle.ok()) << handle.status().to_string();
    std::optional<KernelReport> report;
    if (handle.ok()) report = (*handle)->kernel_report();
    EXPECT_TRUE(report.has_value()) << isa;
    KernelReport out = report.value_or(KernelReport{});
    for (const NodeKernel& node : out.nodes) {
      EXPECT_TRUE(registered(registry, node)) << node.kernel;
    }
    return out;
  };
  const KernelReport portable = report_at("portable");
  EXPECT_EQ(portable.features, "none");
  ASSERT_EQ(portable.nodes.size(), 2u);
  EXPECT_EQ(portable.nodes[0].node, "instruction 0 (rms_norm)");
  EXPECT_EQ(portable.nodes[0].op, "rms_norm");
  EXPECT_EQ(portable.nodes[0].kernel, "portable.rms_norm");
  EXPECT_EQ(portable.nodes[1].kernel, "portable.add");
  for (const CpuKernelPath& path : cpu_kernel_paths()) {
    if (!CpuFeatures::host().covers(path.needs)) continue;
    const KernelReport native = report_at(path.isa);
    EXPECT_NE(native.features, "none") << path.isa;
    ASSERT_EQ(native.nodes.size(), 2u);
    EXPECT_EQ(native.nodes[0].kernel, str_cat(path.prefix, "rms_norm")) << path.isa;
    EXPECT_EQ(native.nodes[1].kernel, str_cat(path.prefix, "add")) << path.isa;
  }
}

// A chunk of 40 rows times a packed bf16 weight, through the backend's passes, preprocess and a
// delegate initialised with `options`: the output.
std::vector<float> run_bf16_chunk(const std::vector<float>& x, const std::vector<uint16_t>& w,
                                  const OptionMap& options) {
  Graph g(std::make_shared<ConstantTable>());
  std::vector<uint8_t> bytes(w.size() * 2);
  std::memcpy(bytes.data(), w.data(), bytes.size());
  const ConstantId w_id = *g.mutable_constants().add("w", DType::kBF16, {16, 64}, make_owned_source(bytes));
  ValueId in = *g.add_input("x", DType::kF32, {40, 64});
  ValueId h = *g.add(OpKind::kLinear, {in, *g.use_constant(w_id)});
  EXPECT_TRUE(g.add_output("h", h).ok());
  auto backend = CpuBackend::create();
  auto resolved = resolve_options((*backend)->option_schema(), {}, {});
  for (auto& pass : (*backend)->passes(*resolved)) {
    EXPECT_TRUE(pass->run(g).ok());
  }
  PartitionSubgraph partition{"forward", 0, &g, {0}};
  auto payload = (*backend)->preprocess(partition, *resolved);
  EXPECT_TRUE(payload.ok()) << payload.status().to_string();
  std::vector<uint8_t> blob(payload->blob->size_bytes());
  EXPECT_TRUE(payload->blob->read(blob).ok());
  MemoryNamedData named_data;
  for (const NamedDataSpec& entry : payload->named_data) {
    std::vector<uint8_t> data(entry.source->size_bytes());
    EXPECT_TRUE(entry.source->read(data).ok());
    named_data.put(entry.key, data);
  }
  Runtime runtime(options);
  const std::vector<TensorSpec> inputs = {{DType::kF32, {40, 64}}};
  auto handle = runtime.init(blob, inputs, named_data);
  EXPECT_TRUE(handle.ok()) << handle.status().to_string();
  std::vector<float> out(40 * 16, NAN);
  const Shape out_shape = {40, 16};
  std::vector<float> x_copy = x;
  const std::vector<TensorView> in_views = {TensorView(x_copy.data(), DType::kF32, inputs[0].shape)};
  const std::vector<TensorView> out_views = {TensorView(out.data(), DType::kF32, out_shape)};
  auto instance = (*handle)->new_instance();
  ThreadPool pool(2);
  EXPECT_TRUE((*instance)->execute(in_views, out_views, KernelContext{&pool}).ok());
  return out;
}

// bf16_gemm=widen multiplies in f32 (the portable result on x as given); pairs rounds x to bf16
// for vdpbf16ps where the CPU has it; auto is one of the two, as the probe decides, or AMX tiles
// (x rounded too) where the CPU has them.
TEST(CpuBackendTest, TheBf16GemmRuntimeOptionChoosesHowBf16WeightsMultiply) {
  std::mt19937 rng(41);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(40 * 64);
  std::vector<uint16_t> w(16 * 64);
  for (float& v : x) v = dist(rng);
  for (uint16_t& v : w) v = f32_to_bf16(dist(rng));
  auto reference = [&](bool round_x) {
    std::vector<float> out(40 * 16);
    for (size_t r = 0; r < 40; ++r) {
      for (size_t n = 0; n < 16; ++n) {
        double sum = 0.0;
        for (size_t k = 0; k < 64; ++k) {
          const float xv = round_x ? bf16_to_f32(f32_to_bf16(x[r * 64 + k])) : x[r * 64 + k];
          sum += static_cast<double>(xv) * bf16_to_f32(w[n * 64 + k]);
        }
        out[r * 16 + n] = static_cast<float>(sum);
      }
    }
    return out;
  };
  auto option = [](const char* value) {
    OptionMap given;
    given.emplace("bf16_gemm", RawOptionValue::text(value));
    return given;
  };
  auto near = [](const std::vector<float>& got, const std::vector<float>& want) {
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::fabs(got[i] - want[i]) > 1e-4f) return false;
    }
    return true;
  };
  const std::vector<float> exact = reference(false);
  const std::vector<float> rounded = reference(true);
  ASSERT_FALSE(near(exact, rounded));  // the inputs tell the two apart
  EXPECT_TRUE(near(run_bf16_chunk(x, w, option("widen")), exact));
  // The pair GEMMs: x86's vdpbf16ps and AArch64's bfdot / bfmmla; a build or a CPU without them
  // widens.
  const bool has_pairs =
      cpu_kernel_arch() == "x86" &&
      CpuFeatures::host().covers(CpuFeatures().with(CpuFeature::kAvx512).with(CpuFeature::kAvx512Bf16));
  const bool has_arm_pairs = cpu_kernel_arch() == "arm" && CpuFeatures::host().has(CpuFeature::kNeonBf16);
  EXPECT_TRUE(near(run_bf16_chunk(x, w, option("pairs")), has_pairs || has_arm_pairs ? rounded : exact));
  // The probe's verdict is the machine's (cpu::bf16_dot_speedup): auto is one
  // of the two ways, whole.
  const std::vector<float> automatic = run_bf16_chunk(x, w, option("auto"));
  EXPECT_TRUE(near(automatic, exact) || near(automatic, rounded));
  // Where the CPU has AMX tiles, auto takes them (x rounded as for the pairs).
  if (cpu_kernel_arch() == "x86" && CpuFeatures::host().has(CpuFeature::kAmxBf16)) {
    EXPECT_TRUE(near(automatic, rounded));
  }
  // On AArch64 auto takes bfdot / bfmmla wherever the CPU has bf16 (no probe).
  if (has_arm_pairs) {
    EXPECT_TRUE(near(automatic, rounded));
  }
  EXPECT_EQ(cpu::bf16_dot_speedup(1) > 0.0, has_pairs);
}

TEST(CpuBackendTest, TheLinearsOfOneInputBecomeOneMultiLinear) {
  Graph g(std::make_shared<ConstantTable>());
  ValueId x = *g.add_input("x", DType::kF32, {2, 4});
  ValueId wq = constant_value(g, "wq", {3, 4}), wk = constant_value(g, "wk", {2, 4});
  ValueId wv = constant_value(g, "wv", {2, 4}), wb = constant_value(g, "wb", {3, 4});
  ValueId b = constant_value(g, "b", {3});
  ValueId q = *g.add(OpKind::kLinear, {x, wq}, {}, "q_proj");
  ValueId y = *g.add(OpKind::kSilu, {x});
  ValueId k = *g.add(OpKind::kLinear, {x, wk}, {}, "k_proj");
  ValueId late_w = *g.add(OpKind::kMul, {wk, wk});  // computed after q_proj: cannot join it
  ValueId v = *g.add(OpKind::kLinear, {x, wv}, {}, "v_proj");
  ValueId biased = *g.add(OpKind::kLinear, {x, wb, b});  // the only one with a bias
  ValueId other_x = *g.add(OpKind::kLinear, {y, wq});
  ValueId late = *g.add(OpKind::kLinear, {x, late_w});
  for (auto [name, value] :
       {std::pair{"q", q}, {"k", k}, {"v", v}, {"biased", biased}, {"other_x", other_x}, std::pair{"late", late}}) {
    ASSERT_TRUE(g.add_output(name, value).ok());
  }
  ASSERT_TRUE(MultiLinearFusion().run(g).ok());
  ASSERT_TRUE(verify_graph(g).ok()) << verify_graph(g).to_string();
  ASSERT_EQ(g.nodes().size(), 6u);
  const GraphNode& fused = g.nodes()[0];
  EXPECT_EQ(fused.op, OpKind::kMultiLinear);
  EXPECT_EQ(fused.inputs, (std::vector<ValueId>{x, wq, wk, wv}));
  EXPECT_EQ(fused.outputs, (std::vector<ValueId>{q, k, v}));
  EXPECT_EQ(fused.attributes.get_int("parts").value_or(0), 3);
  EXPECT_EQ(fused.name, "q_proj+k_proj+v_proj");
  EXPECT_EQ(g.value(q).producer, 0);
  for (size_t n = 1; n < g.nodes().size(); ++n) {
    EXPECT_NE(g.nodes()[n].op, OpKind::kMultiLinear) << "node " << n;
  }

  // Biased linears merge with biased ones, biases after the weights.
  Graph qwen(std::make_shared<ConstantTable>());
  ValueId h = *qwen.add_input("h", DType::kF32, {1, 4});
  ValueId w0 = constant_value(qwen, "w0", {3, 4}), w1 = constant_value(qwen, "w1", {2, 4});
  ValueId b0 = constant_value(qwen, "b0", {3}), b1 = constant_value(qwen, "b1", {2});
  ValueId o0 = *qwen.add(OpKind::kLinear, {h, w0, b0});
  ValueId o1 = *qwen.add(OpKind::kLinear, {h, w1, b1});
  ASSERT_TRUE(qwen.add_output("o0", o0).ok() && qwen.add_output("o1", o1).ok());
  ASSERT_TRUE(MultiLinearFusion().run(qwen).ok());
  ASSERT_TRUE(verify_graph(qwen).ok()) << verify_graph(qwen).to_string();
  ASSERT_EQ(qwen.nodes().size(), 1u);
  EXPECT_EQ(qwen.nodes()[0].inputs, (std::vector<ValueId>{h, w0, w1, b0, b1}));
}

// A layer's attention inputs as the exporter builds them (after multi_linear_fusion, with the
// parts in the order given): q / k / v reshaped into heads, q and k rotated, k and v written into
// the caches in place, attention over the result. Variations break the chain.
struct AttentionInputs {
  std::unique_ptr<Graph> graph;
  ValueId x, wq, wk, wv, k_cache, v_cache, positions, q_rotated, keys, values, attended;
};

// kQkNorms is no break: Qwen3's per-head norms of q and k, which fuse.
enum class ChainBreak { kNone, kReturnedKeys, kKeyNorm, kQkNorms };

AttentionInputs attention_inputs(int64_t head_dim, ChainBreak chain_break = ChainBreak::kNone) {
  AttentionInputs a;
  a.graph = std::make_unique<Graph>(std::make_shared<ConstantTable>());
  Graph& g = *a.graph;
  const int64_t seq = 3, q_heads = 4, kv_heads = 2, hidden = 8;
  a.x = *g.add_input("x", DType::kF32, {1, seq, hidden});
  a.positions = *g.add_input("positions", DType::kI64, {seq});
  a.k_cache = *g.add_input("k_cache", DType::kF32, {1, kv_heads, 16, head_dim});
  a.v_cache = *g.add_input("v_cache", DType::kF32, {1, kv_heads, 16, head_dim});
  a.wq = constant_value(g, "wq", {q_heads * head_dim, hidden});
  a.wk = constant_value(g, "wk", {kv_heads * head_dim, hidden});
  a.wv = constant_value(g, "wv", {kv_heads * head_dim, hidden});
  // Parts in the order v, q, k: the fusion finds each one's role from what reads it.
  const std::vector<ValueId> projected =
      *g.add_node(OpKind::kMultiLinear, {a.x, a.wv, a.wq, a.wk}, {{"parts", int64_t{3}}}, "qkv");
  const Attributes rope{{"theta", 10000.0}};
  ValueId q = *g.add(OpKind::kReshape, {projected[1]}, {{"shape", Shape{1, seq, q_heads, head_dim}}});
  ValueId k = *g.add(OpKind::kReshape, {projected[2]}, {{"shape", Shape{1, seq, kv_heads, head_dim}}});
  ValueId v = *g.add(OpKind::kReshape, {projected[0]}, {{"shape", Shape{1, seq, kv_heads, head_dim}}});
  if (chain_break == ChainBreak::kKeyNorm) {
    k = *g.add(OpKind::kRmsNorm, {k, constant_value(g, "k_norm", {head_dim})}, {{"eps", 1e-6}});
  }
  if (chain_break == ChainBreak::kQkNorms) {
    q = *g.add(OpKind::kRmsNorm, {q, constant_value(g, "q_norm", {head_dim})}, {{"eps", 1e-6}});
    k = *g.add(OpKind::kRmsNorm, {k, constant_value(g, "k_norm", {head_dim})}, {{"eps", 1e-6}});
  }
  a.q_rotated = *g.add(OpKind::kRope, {q, a.positions}, rope);
  k = *g.add(OpKind::kRope, {k, a.positions}, rope);
  a.keys = *g.add(OpKind::kKvCacheUpdate, {a.k_cache, k, a.positions});
  a.values = *g.add(OpKind::kKvCacheUpdate, {a.v_cache, v, a.positions});
  a.attended = *g.add(OpKind::kAttention, {a.q_rotated, a.keys, a.values, a.positions}, {{"scale", 0.125}});
  EXPECT_TRUE(g.add_output("attended", a.attended).ok());
  if (chain_break == ChainBreak::kReturnedKeys) {
    EXPECT_TRUE(g.add_output("new_keys", k).ok());
  }
  return a;
}

TEST(CpuBackendTest, AttentionInputsBecomeOneQkvRopeCache) {
  AttentionInputs a = attention_inputs(32);
  Graph& g = *a.graph;
  ASSERT_TRUE(QkvRopeCacheFusion().run(g).ok());
  ASSERT_TRUE(verify_graph(g).ok()) << verify_graph(g).to_string();
  ASSERT_EQ(g.nodes().size(), 2u);
  const GraphNode& fused = g.nodes()[0];
  EXPECT_EQ(fused.op, OpKind::kQkvRopeCache);
  EXPECT_EQ(fused.inputs, (std::vector<ValueId>{a.x, a.wq, a.wk, a.wv, a.k_cache, a.v_cache, a.positions}));
  EXPECT_EQ(fused.outputs, (std::vector<ValueId>{a.q_rotated, a.keys, a.values}));
  EXPECT_EQ(fused.attributes.get_float("theta").value_or(0.0), 10000.0);
  EXPECT_EQ(fused.name, "qkv");
  EXPECT_EQ(g.nodes()[1].op, OpKind::kAttention);

  // Per-head norms of q and k go inside, their weights last, with their epsilon.
  AttentionInputs normed = attention_inputs(32, ChainBreak::kQkNorms);
  ASSERT_TRUE(QkvRopeCacheFusion().run(*normed.graph).ok());
  ASSERT_TRUE(verify_graph(*normed.graph).ok()) << verify_graph(*normed.graph).to_string();
  ASSERT_EQ(normed.graph->nodes().size(), 2u);
  const GraphNode& with_norms = normed.graph->nodes()[0];
  EXPECT_EQ(with_norms.op, OpKind::kQkvRopeCache);
  ASSERT_EQ(with_norms.inputs.size(), qkv_rope_cache::kUnbiasedInputs + qkv_rope_cache::kNormInputs);
  EXPECT_NE(with_norms.inputs[7], with_norms.inputs[8]);
  EXPECT_EQ(normed.graph->value(with_norms.inputs[7]).shape, Shape{32});
  EXPECT_EQ(normed.graph->value(with_norms.inputs[8]).shape, Shape{32});
  EXPECT_EQ(with_norms.attributes.get_float("qk_norm_eps").value_or(0.0), 1e-6);

  // Heads narrower than a panel, keys a graph output too (the returned cache form), or a norm
  // between the keys' projection and their rope alone: nothing changes.
  for (auto [head_dim, chain_break] :
       {std::pair{int64_t{16}, ChainBreak::kNone}, std::pair{int64_t{32}, ChainBreak::kReturnedKeys},
        std::pair{int64_t{32}, ChainBreak::kKeyNorm}}) {
    AttentionInputs other = attention_inputs(head_dim, chain_break);
    const size_t before = other.graph->nodes().size();
    ASSERT_TRUE(QkvRopeCacheFusion().run(*other.graph).ok());
    EXPECT_EQ(other.graph->nodes().size(), before) << "head_dim " << head_dim;
    for (const GraphNode& node : other.graph->nodes()) {
      EXPECT_NE(node.op, OpKind::kQkvRopeCache);
    }
  }
}

// A decoder layer's MLP and residual connections fold into linear_add and swiglu_linear; a
// linear with a second reader, a biased gate, or gate and up over different inputs stay.
TEST(CpuBackendTest, TheEpilogueFusionsFoldResidualsAndTheGatedMlp) {
  Graph g(std::make_shared<ConstantTable>());
  ValueId x = *g.add_input("x", DType::kF32, {2, 4});
  ValueId wo = constant_value(g, "wo", {4, 4}), wg = constant_value(g, "wg", {6, 4});
  ValueId wu = constant_value(g, "wu", {6, 4}), wd = constant_value(g, "wd", {4, 6});
  ValueId bo = constant_value(g, "bo", {4});
  ValueId projected = *g.add(OpKind::kLinear, {x, wo, bo}, {}, "o_proj");
  ValueId h = *g.add(OpKind::kAdd, {x, projected});
  ValueId gate = *g.add(OpKind::kLinear, {h, wg}, {}, "gate_proj");
  ValueId up = *g.add(OpKind::kLinear, {h, wu}, {}, "up_proj");
  ValueId gated = *g.add(OpKind::kSwiglu, {gate, up});
  ValueId down = *g.add(OpKind::kLinear, {gated, wd}, {}, "down_proj");
  ValueId out = *g.add(OpKind::kAdd, {h, down});
  // Read twice: stays a linear and an add.
  ValueId shared = *g.add(OpKind::kLinear, {out, wo});
  ValueId twice = *g.add(OpKind::kAdd, {out, shared});
  ASSERT_TRUE(g.add_output("twice", twice).ok() && g.add_output("shared", shared).ok());

  ASSERT_TRUE(SwigluLinearFusion().run(g).ok());
  ASSERT_TRUE(LinearAddFusion().run(g).ok());
  ASSERT_TRUE(verify_graph(g).ok()) << verify_graph(g).to_string();
  ASSERT_EQ(g.nodes().size(), 5u);
  EXPECT_EQ(g.nodes()[0].op, OpKind::kLinearAdd);
  EXPECT_EQ(g.nodes()[0].inputs, (std::vector<ValueId>{x, wo, x, bo}));
  EXPECT_EQ(g.nodes()[0].outputs, (std::vector<ValueId>{h}));
  EXPECT_EQ(g.nodes()[0].name, "o_proj");
  EXPECT_EQ(g.nodes()[1].op, OpKind::kSwigluLinear);
  EXPECT_EQ(g.nodes()[1].inputs, (std::vector<ValueId>{h, wg, wu}));
  EXPECT_EQ(g.nodes()[1].outputs, (std::vector<ValueId>{gated}));
  EXPECT_EQ(g.nodes()[2].op, OpKind::kLinearAdd);
  EXPECT_EQ(g.nodes()[2].inputs, (std::vector<ValueId>{gated, wd, h}));
  EXPECT_EQ(g.nodes()[3].op, OpKind::kLinear);
  EXPECT_EQ(g.nodes()[4].op, OpKind::kAdd);

  // A biased gate, or gate and up over different inputs, are no gated MLP the kernel runs.
  Graph other(std::make_shared<ConstantTable>());
  ValueId a = *other.add_input("a", DType::kF32, {1, 4});
  ValueId b = *other.add_input("b", DType::kF32, {1, 4});
  ValueId w0 = constant_value(other, "w0", {6, 4}), w1 = constant_value(other, "w1", {6, 4});
  ValueId bias = constant_value(other, "bias", {6});
  ValueId g0 = *other.add(OpKind::kLinear, {a, w0, bias});
  ValueId u0 = *other.add(OpKind::kLinear, {a, w1});
  ValueId s0 = *other.add(OpKind::kSwiglu, {g0, u0});
  ValueId g1 = *other.add(OpKind::kLinear, {a, w0});
  ValueId u1 = *other.add(OpKind::kLinear, {b, w1});
  ValueId s1 = *other.add(OpKind::kSwiglu, {g1, u1});
  ASSERT_TRUE(other.add_output("s0", s0).ok() && other.add_output("s1", s1).ok());
  ASSERT_TRUE(SwigluLinearFusion().run(other).ok());
  EXPECT_EQ(other.nodes().size(), 6u);
}

// A bf16 [rows, cols] constant whose element (r, c) is r * cols + c (exact in bf16 below 256).
ValueId counting_constant(Graph& g, const std::string& name, int64_t rows, int64_t cols) {
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * cols) * 2);
  for (int64_t i = 0; i < rows * cols; ++i) {
    const uint16_t bits = f32_to_bf16(static_cast<float>(i));
    std::memcpy(bytes.data() + 2 * i, &bits, 2);
  }
  const ConstantId id = *g.mutable_constants().add(name, DType::kBF16, {rows, cols}, make_owned_source(bytes));
  return *g.use_constant(id);
}

std::vector<uint8_t> constant_bytes(const Graph& g, ValueId value) {
  const ConstantEntry& entry = g.constants().at(g.value(value).constant);
  std::vector<uint8_t> bytes(static_cast<size_t>(entry.source->size_bytes()));
  EXPECT_TRUE(entry.source->read(bytes).ok());
  return bytes;
}

TEST(PackWeightsPassTest, PacksEveryLinearMatrixOnceAndATiedTableWithIt) {
  Graph g(std::make_shared<ConstantTable>());
  ValueId ids = *g.add_input("ids", DType::kI32, {2});
  ValueId x = *g.add_input("x", DType::kF32, {2, 15});
  ValueId runtime_w = *g.add_input("runtime_w", DType::kF32, {3, 15});
  ValueId table = counting_constant(g, "table", 9, 15);    // tied: gathered and read by lm_head
  ValueId untied = counting_constant(g, "untied", 4, 15);  // only gathered
  ValueId gate = counting_constant(g, "gate", 40, 15), up = counting_constant(g, "up", 7, 15);
  ValueId e = *g.add(OpKind::kEmbedding, {table, ids});
  ValueId e2 = *g.add(OpKind::kEmbedding, {untied, ids});
  ValueId logits = *g.add(OpKind::kLinear, {x, table});
  const Attributes two{{"parts", int64_t{2}}};
  auto fused = g.add_node(OpKind::kMultiLinear, {x, gate, up}, two);
  ASSERT_TRUE(fused.ok()) << fused.status().to_string();
  ValueId computed = *g.add(OpKind::kLinear, {x, runtime_w});  // not a constant: stays in rows
  for (auto [name, value] : {std::pair{"e", e},
                             {"e2", e2},
                             {"logits", logits},
                             {"gate", (*fused)[0]},
                             {"up", (*fused)[1]},
                             std::pair{"computed", computed}}) {
    ASSERT_TRUE(g.add_output(name, value).ok());
  }
  ASSERT_TRUE(PackWeightsPass().run(g).ok());
  ASSERT_TRUE(verify_graph(g).ok()) << verify_graph(g).to_string();

  const std::span<const GraphNode> nodes = g.nodes();
  auto packed_of = [&](const GraphNode& node, size_t input) {
    return g.constants().at(g.value(node.inputs[input]).constant);
  };
  // The tied table: one packed constant read by the embedding and the linear, in the layout's
  // places (element (r, c) of a bf16 panel sits at PanelLayout::index, zeros around it).
  EXPECT_EQ(packed_of(nodes[0], 0).name, "table.panel32");
  EXPECT_EQ(nodes[0].inputs[0], nodes[2].inputs[1]);
  EXPECT_EQ(nodes[0].attributes.get_string("weight_layout").value_or(""), "panel32");
  EXPECT_EQ(nodes[2].attributes.get_ints("weight_shapes").value_or(std::vector<int64_t>{}),
            (std::vector<int64_t>{9, 15}));
  const PanelLayout layout = PanelLayout::of(9, 15, DType::kBF16);
  EXPECT_EQ(packed_of(nodes[2], 1).shape, (Shape{1, 8, 64}));
  const std::vector<uint8_t> bytes = constant_bytes(g, nodes[2].inputs[1]);
  ASSERT_EQ(bytes.size(), static_cast<size_t>(layout.elements()) * 2);
  std::vector<uint16_t> packed(bytes.size() / 2);
  std::memcpy(packed.data(), bytes.data(), bytes.size());
  for (int64_t r = 0; r < 9; ++r) {
    for (int64_t c = 0; c < 15; ++c) {
      ASSERT_EQ(bf16_to_f32(packed[static_cast<size_t>(layout.index(r, c))]), static_cast<float>(r * 15 + c))
          << r << ", " << c;
    }
  }
  EXPECT_EQ(packed[static_cast<size_t>(layout.index(0, 14)) + 1], 0) << "an odd K's last pair is padded with zero";
  // An untied table and a computed weight stay as they are.
  EXPECT_EQ(nodes[1].inputs[0], untied);
  EXPECT_FALSE(nodes[1].attributes.has("weight_layout"));
  EXPECT_EQ(nodes[4].inputs[1], runtime_w);
  EXPECT_FALSE(nodes[4].attributes.has("weight_layout"));
  // multi_linear: every part packed, one [N, K] pair each.
  EXPECT_EQ(packed_of(nodes[3], 1).name, "gate.panel32");
  EXPECT_EQ(packed_of(nodes[3], 1).shape, (Shape{2, 8, 64}));
  EXPECT_EQ(packed_of(nodes[3], 2).name, "up.panel32");
  EXPECT_EQ(nodes[3].attributes.get_ints("weight_shapes").value_or(std::vector<int64_t>{}),
            (std::vector<int64_t>{40, 15, 7, 15}));
  EXPECT_EQ(nodes[3].attributes.get_int("parts").value_or(0), 2);

  // The other method over the same table finds the packed constants instead of adding more;
  // the pass leaves what is laid out already.
  const size_t constants = g.constants().size();
  Graph decode(g.constant_table());
  ValueId x1 = *decode.add_input("x", DType::kF32, {1, 15});
  ValueId h = *decode.add(OpKind::kLinear, {x1, *decode.use_constant(g.constants().find("gate"))});
  ASSERT_TRUE(decode.add_output("h", h).ok());
  ASSERT_TRUE(PackWeightsPass().run(decode).ok());
  ASSERT_TRUE(PackWeightsPass().run(decode).ok());
  EXPECT_EQ(g.constants().size(), constants);
  EXPECT_EQ(decode.value(decode.nodes()[0].inputs[1]).constant, g.constants().find("gate.panel32"));
  ASSERT_TRUE(verify_graph(decode).ok()) << verify_graph(decode).to_string();
}

TEST(PackWeightsPassTest, RefusesANameTakenByAnotherShape) {
  Graph g(std::make_shared<ConstantTable>());
  ValueId x = *g.add_input("x", DType::kF32, {1, 4});
  ValueId w = counting_constant(g, "w", 3, 4);
  (void)counting_constant(g, "w.panel32", 3, 4);  // the name the pass would give, another shape
  ValueId h = *g.add(OpKind::kLinear, {x, w});
  ASSERT_TRUE(g.add_output("h", h).ok());
  const Status refused = PackWeightsPass().run(g);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("'w.panel32'"), std::string::npos) << refused.to_string();
}

TEST(WeightDtypePassTest, ConvertsTheMatrixOnceAndRefusesWhatIsNotAFloatDtype) {
  TestGraph made = test_graph();
  Graph& g = *made.graph;
  WeightDtypePass pass(MatrixFormats::uniform(MatrixFormat{DType::kBF16}));
  ASSERT_TRUE(pass.run(g).ok());
  const ConstantId converted = g.constants().find("w.bf16");
  ASSERT_GE(converted, 0);
  EXPECT_EQ(g.constants().at(converted).dtype, DType::kBF16);
  for (const GraphNode& node : g.nodes()) {
    if (node.op == OpKind::kLinear) {
      EXPECT_EQ(g.value(node.inputs[1]).constant, converted);
    }
  }
  // A second graph over the same table (the other method) finds it instead of adding another.
  const size_t constants = g.constants().size();
  Graph decode(g.constant_table());
  ValueId x = *decode.add_input("x", DType::kF32, {1, 4});
  ValueId h = *decode.add(OpKind::kLinear, {x, *decode.use_constant(g.constants().find("w"))});
  ASSERT_TRUE(decode.add_output("h", h).ok());
  ASSERT_TRUE(pass.run(decode).ok());
  EXPECT_EQ(g.constants().size(), constants);
  EXPECT_EQ(decode.value(decode.nodes()[0].inputs[1]).constant, converted);
  for (const char* bad : {"i8", "q8_0", "half"}) {
    auto refused = MatrixFormat::parse(bad, 32, "weight_dtype");
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(refused.status().message().find(str_cat("option 'weight_dtype': expected as_exported, f32, f16, bf16, "
                                                      "int8 or int4, found '",
                                                      bad, "'")),
              std::string::npos)
        << refused.status().to_string();
  }
  auto bad_group = MatrixFormat::parse("int4", 48, "weight_dtype");
  ASSERT_FALSE(bad_group.ok());
  EXPECT_NE(bad_group.status().message().find("option 'group_size': expected 16, 32, 64 or 128, found 48"),
            std::string::npos);
}

// A decoder's tail in miniature: embedding, a body linear, and the head whose output is the
// graph's; `tied`: the head reads the embedding's table.
struct HeadGraph {
  Graph graph{std::make_shared<ConstantTable>()};
  ValueId table = kNoValue;
  ValueId body_weight = kNoValue;
  ValueId head_weight = kNoValue;
};

std::unique_ptr<HeadGraph> head_graph(bool tied) {
  auto made = std::make_unique<HeadGraph>();
  Graph& g = made->graph;
  ValueId ids = *g.add_input("ids", DType::kI64, {1, 2});
  made->table = counting_constant(g, "embed", 64, 32);
  made->body_weight = counting_constant(g, "body", 32, 32);
  made->head_weight = tied ? made->table : counting_constant(g, "head", 64, 32);
  ValueId x = *g.add(OpKind::kEmbedding, {made->table, ids});
  ValueId h = *g.add(OpKind::kLinear, {x, made->body_weight});
  ValueId logits = *g.add(OpKind::kLinear, {h, made->head_weight});
  EXPECT_TRUE(g.add_output("logits", logits).ok());
  return made;
}

// Runs the cpu backend's passes over `g` with `given` options.
Status run_passes(Graph& g, const std::map<std::string, std::string>& given) {
  auto backend = CpuBackend::create();
  OptionMap raw;
  for (const auto& [name, value] : given) {
    raw.emplace(name, RawOptionValue::text(value));
  }
  auto resolved = resolve_options((*backend)->option_schema(), raw, {});
  if (!resolved.ok()) return resolved.status();
  for (auto& pass : (*backend)->passes(*resolved)) {
    STATICLM_RETURN_IF_ERROR(pass->run(g));
  }
  return ok_status();
}

std::string matrix_name(const Graph& g, size_t node, size_t input) {
  return g.constants().at(g.value(g.nodes()[node].inputs[input]).constant).name;
}

TEST(MatrixFormatsTest, TheHeadAndAnUntiedTableTakeTheirOwnFormats) {
  // A quantized body under an f16 head: the tied table is the head's one f16 tensor.
  auto tied = head_graph(true);
  ASSERT_TRUE(run_passes(tied->graph, {{"weight_dtype", "int4"}, {"lm_head_dtype", "f16"}}).ok());
  EXPECT_EQ(matrix_name(tied->graph, 0, 0), "embed.f16.panel32");
  EXPECT_EQ(matrix_name(tied->graph, 1, 1), "body.panel32_q4_g32");
  EXPECT_EQ(matrix_name(tied->graph, 2, 1), "embed.f16.panel32");
  // Untied: the table as embedding_dtype says (int8 panels, gathered row by row), the head as
  // the body by default.
  auto untied = head_graph(false);
  ASSERT_TRUE(run_passes(untied->graph, {{"weight_dtype", "f16"}, {"embedding_dtype", "int8"}}).ok());
  EXPECT_EQ(matrix_name(untied->graph, 0, 0), "embed.panel32_q8_g32");
  EXPECT_EQ(matrix_name(untied->graph, 1, 1), "body.f16.panel32");
  EXPECT_EQ(matrix_name(untied->graph, 2, 1), "head.f16.panel32");
  // Under a quantized weight_dtype an untied table stays as exported, in rows.
  auto plain = head_graph(false);
  ASSERT_TRUE(run_passes(plain->graph, {{"weight_dtype", "int8"}, {"lm_head_dtype", "as_exported"}}).ok());
  EXPECT_EQ(matrix_name(plain->graph, 0, 0), "embed");
  EXPECT_FALSE(plain->graph.nodes()[0].attributes.has(kWeightLayoutAttr));
  EXPECT_EQ(matrix_name(plain->graph, 2, 1), "head.panel32");
  // A tied table cannot be two formats.
  auto conflict = head_graph(true);
  const Status refused = run_passes(conflict->graph, {{"lm_head_dtype", "bf16"}, {"embedding_dtype", "f16"}});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("option 'embedding_dtype': 'embed' is both the embedding table and the lm_head "
                                   "(tied), stored as lm_head_dtype (bf16); embedding_dtype asks f16"),
            std::string::npos)
      << refused.to_string();
}

}  // namespace
}  // namespace staticlm
