// The cpu delegate blob: written from a subgraph, read back verified, refused when corrupt or
// inconsistent with the call, and executed by the runtime side.
#include "staticlm/backends/cpu/cpu_blob.h"

#include <cmath>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "staticlm/backends/cpu/cpu_delegate_generated.h"
#include "staticlm/backends/cpu/cpu_runtime.h"

namespace staticlm {
namespace {

// sub(x, cache, rows, positions; w): y = silu(x) * x; h = linear(y, w);
// cache' = kv_cache_update(cache, rows, positions) (in place); outputs h and y.
struct TestGraph {
  std::unique_ptr<Graph> graph;
  ConstantId w = -1;
  std::vector<float> weights;
};

TestGraph test_graph() {
  TestGraph out;
  auto constants = std::make_shared<ConstantTable>();
  out.weights.resize(12);
  for (size_t i = 0; i < out.weights.size(); ++i) out.weights[i] = 0.1f * static_cast<float>(i) - 0.5f;
  std::vector<uint8_t> bytes(out.weights.size() * 4);
  std::memcpy(bytes.data(), out.weights.data(), bytes.size());
  out.w = *constants->add("w", DType::kF32, {3, 4}, make_owned_source(std::move(bytes)));
  out.graph = std::make_unique<Graph>(constants);
  Graph& g = *out.graph;
  ValueId x = *g.add_input("x", DType::kF32, {2, 4});
  ValueId cache = *g.add_input("cache", DType::kF32, {1, 1, 4, 2});
  ValueId rows = *g.add_input("rows", DType::kF32, {1, 1, 1, 2});
  ValueId positions = *g.add_input("positions", DType::kI32, {1});
  ValueId w = *g.use_constant(out.w);
  ValueId s = *g.add(OpKind::kSilu, {x});
  ValueId y = *g.add(OpKind::kMul, {s, x});
  ValueId h = *g.add(OpKind::kLinear, {y, w});
  (void)*g.add(OpKind::kKvCacheUpdate, {cache, rows, positions});
  EXPECT_TRUE(g.add_output("h", h).ok());
  EXPECT_TRUE(g.add_output("y", y).ok());
  return out;
}

std::vector<TensorSpec> call_inputs() {
  return {{DType::kF32, {2, 4}},
          {DType::kF32, {1, 1, 4, 2}},
          {DType::kF32, {1, 1, 1, 2}},
          {DType::kI32, {1}},
          {DType::kF32, {3, 4}}};
}

void expect_refused(std::span<const uint8_t> blob, std::span<const TensorSpec> inputs, std::string_view expected) {
  auto plan = read_cpu_blob(blob, inputs);
  ASSERT_FALSE(plan.ok()) << "expected a refusal containing: " << expected;
  EXPECT_NE(plan.status().message().find(expected), std::string::npos) << plan.status().message();
}

TEST(CpuBlobTest, RoundTripsASubgraph) {
  TestGraph t = test_graph();
  const std::vector<ConstantId> constants = {t.w};
  auto blob = write_cpu_blob(*t.graph, constants);
  ASSERT_TRUE(blob.ok()) << blob.status().to_string();
  const std::vector<TensorSpec> inputs = call_inputs();
  auto plan = read_cpu_blob(*blob, inputs);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->nodes.size(), 4u);
  ASSERT_EQ(plan->output_specs.size(), 2u);
  EXPECT_EQ(plan->output_specs[0], (TensorSpec{DType::kF32, {2, 3}}));
  EXPECT_EQ(plan->output_specs[1], (TensorSpec{DType::kF32, {2, 4}}));
  EXPECT_EQ(plan->updated_inputs, (std::vector<uint32_t>{1}));  // the cache
  EXPECT_GT(plan->arena_size, 0u);                              // silu(x) lives in the delegate's arena
}

TEST(CpuBlobTest, OutputOrderPermutesTheInternalOutputs) {
  TestGraph t = test_graph();
  const std::vector<ConstantId> constants = {t.w};
  const std::vector<uint32_t> reversed = {1, 0};
  auto blob = write_cpu_blob(*t.graph, constants, reversed);
  ASSERT_TRUE(blob.ok()) << blob.status().to_string();
  auto plan = read_cpu_blob(*blob, call_inputs());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->output_specs[0], (TensorSpec{DType::kF32, {2, 4}}));
  EXPECT_EQ(plan->output_specs[1], (TensorSpec{DType::kF32, {2, 3}}));
  const std::vector<uint32_t> bad = {0, 0};
  EXPECT_NE(write_cpu_blob(*t.graph, constants, bad).status().message().find("not a permutation"), std::string::npos);
  EXPECT_NE(write_cpu_blob(*t.graph, {}).status().message().find("constant 'w' is read but not passed"),
            std::string::npos);
}

TEST(CpuBlobTest, RefusesACallThatDoesNotMatch) {
  TestGraph t = test_graph();
  const std::vector<ConstantId> constants = {t.w};
  auto blob = write_cpu_blob(*t.graph, constants);
  ASSERT_TRUE(blob.ok());
  std::vector<TensorSpec> wrong_shape = call_inputs();
  wrong_shape[0].shape = {2, 5};
  expect_refused(*blob, wrong_shape, "value 0: declares input 0 as f32[2,4], the call passes f32[2,5]");
  std::vector<TensorSpec> extra = call_inputs();
  extra.push_back({DType::kF32, {1}});
  expect_refused(*blob, extra, "no value for call input 5");
  std::vector<TensorSpec> fewer = call_inputs();
  fewer.pop_back();
  expect_refused(*blob, fewer, "input index 4 is out of range or taken (the call passes 4 inputs)");
}

TEST(CpuBlobTest, RefusesBytesThatAreNotABlob) {
  const std::vector<TensorSpec> inputs = call_inputs();
  expect_refused({}, inputs, "not a cpu delegate blob");
  const std::vector<uint8_t> garbage(64, 0x5a);
  expect_refused(garbage, inputs, "not a cpu delegate blob");
  TestGraph t = test_graph();
  const std::vector<ConstantId> constants = {t.w};
  std::vector<uint8_t> blob = *write_cpu_blob(*t.graph, constants);
  blob.resize(blob.size() / 2);
  auto truncated = read_cpu_blob(blob, inputs);
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.status().code(), StatusCode::kDataLoss) << truncated.status().to_string();
}

// A hand-built blob over values [in0: f32[4] input 0, a: f32[4] arena 0, out: f32[4] output 0].
struct BlobBuilder {
  flatbuffers::FlatBufferBuilder builder;
  std::vector<flatbuffers::Offset<cpu::fb::Value>> values;
  std::vector<flatbuffers::Offset<cpu::fb::Node>> nodes;
  uint64_t arena_size = 64;

  void value(cpu::fb::Storage storage, uint64_t index, std::vector<int64_t> shape = {4}, uint8_t dtype = 0) {
    values.push_back(cpu::fb::CreateValue(builder, dtype, builder.CreateVector(shape), storage, index));
  }
  void node(const char* op, std::vector<int32_t> inputs, std::vector<uint32_t> outputs) {
    nodes.push_back(cpu::fb::CreateNode(builder, builder.CreateString(op), builder.CreateVector(inputs),
                                        builder.CreateVector(outputs)));
  }
  std::vector<uint8_t> finish(uint32_t version = kCpuBlobVersion) {
    auto root = cpu::fb::CreateDelegate(builder, version, builder.CreateVector(values), builder.CreateVector(nodes),
                                        arena_size, 64);
    cpu::fb::FinishDelegateBuffer(builder, root);
    return {builder.GetBufferPointer(), builder.GetBufferPointer() + builder.GetSize()};
  }
};

BlobBuilder three_values() {
  BlobBuilder b;
  b.value(cpu::fb::Storage::Input, 0);
  b.value(cpu::fb::Storage::Arena, 0);
  b.value(cpu::fb::Storage::Output, 0);
  return b;
}

TEST(CpuBlobTest, RefusesInconsistentBlobs) {
  const std::vector<TensorSpec> inputs = {{DType::kF32, {4}}};
  {
    BlobBuilder b = three_values();
    b.node("silu", {0}, {1});
    b.node("add", {1, 0}, {2});
    EXPECT_TRUE(read_cpu_blob(b.finish(), inputs).ok()) << "the baseline blob is valid";
  }
  {
    BlobBuilder b = three_values();
    b.node("silu", {0}, {1});
    expect_refused(b.finish(2), inputs, "version 2, this build reads version 1");
  }
  {
    BlobBuilder b = three_values();
    b.node("add", {1, 0}, {2});
    expect_refused(b.finish(), inputs, "node 0 (add): reads value 1 before any node writes it");
  }
  {
    BlobBuilder b = three_values();
    b.node("silu", {0}, {0});
    expect_refused(b.finish(), inputs, "node 0 (silu): output 0 is also one of its inputs");
  }
  {
    BlobBuilder b = three_values();
    b.node("silu", {2}, {1});
    b.node("silu", {1}, {0});
    expect_refused(b.finish(), inputs, "reads value 2 before any node writes it");
  }
  {
    BlobBuilder b = three_values();
    b.value(cpu::fb::Storage::Input, 1);
    b.node("silu", {0}, {2});
    b.node("silu", {2}, {3});
    const std::vector<TensorSpec> two = {{DType::kF32, {4}}, {DType::kF32, {4}}};
    expect_refused(b.finish(), two, "node 1 (silu): writes value 3, a delegate input it does not update in place");
  }
  {
    BlobBuilder b = three_values();
    b.arena_size = 8;
    b.node("silu", {0}, {2});
    expect_refused(b.finish(), inputs, "value 1: arena slice [0, +16) is outside the 8-byte arena");
  }
  {
    BlobBuilder b = three_values();
    b.node("silu", {0}, {1});
    expect_refused(b.finish(), inputs, "output 0 (value 2) is never written");
  }
  {
    BlobBuilder b = three_values();  // would make init allocate a terabyte
    b.arena_size = uint64_t{1} << 40;
    b.node("silu", {0}, {1});
    b.node("add", {1, 0}, {2});
    expect_refused(b.finish(), inputs, "arena_size 1099511627776 exceeds the 64 bytes its values need");
  }
  {
    BlobBuilder b = three_values();
    b.node("sigmoid", {0}, {2});
    expect_refused(b.finish(), inputs, "node 0");
  }
  {
    BlobBuilder b = three_values();
    b.node("silu", {0, 7}, {2});
    expect_refused(b.finish(), inputs, "node 0 (silu): input value 7 is out of range (3 values)");
  }
  {
    BlobBuilder b;
    b.value(cpu::fb::Storage::Input, 0);
    b.value(cpu::fb::Storage::Output, 0, {2, 2});
    b.node("silu", {0}, {1});
    expect_refused(b.finish(), inputs, "output 0 is declared f32[2,2] but the op produces f32[4]");
  }
  {
    BlobBuilder b = three_values();
    b.value(cpu::fb::Storage::Arena, 0, {4}, 99);
    expect_refused(b.finish(), inputs, "value 3: unknown dtype code 99");
  }
}

TEST(CpuBlobTest, CorruptedBytesAreRefusedOrReadSafely) {
  TestGraph t = test_graph();
  const std::vector<ConstantId> constants = {t.w};
  const std::vector<uint8_t> good = *write_cpu_blob(*t.graph, constants);
  const std::vector<TensorSpec> inputs = call_inputs();
  std::mt19937 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> bytes = good;
    for (int flips = 1 + static_cast<int>(rng() % 4); flips > 0; --flips) {
      bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    }
    // Either outcome is fine; what matters (under the sanitizers) is that reading is safe and
    // a blob that is accepted is one the reader fully checked.
    auto plan = read_cpu_blob(bytes, inputs);
    if (plan.ok()) {
      for (const CpuValue& value : plan->values) {
        if (value.storage == CpuValueStorage::kArena) {
          EXPECT_LE(value.index + *tensor_bytes(value.spec.dtype, value.spec.shape), plan->arena_size);
        }
      }
    }
  }
}

float silu(float x) {
  return x / (1.0f + std::exp(-x));
}

TEST(CpuRuntimeTest, ExecutesThePartitionAndUpdatesTheCacheInPlace) {
  TestGraph t = test_graph();
  const std::vector<ConstantId> constants = {t.w};
  const std::vector<uint8_t> blob = *write_cpu_blob(*t.graph, constants);
  auto runtime = CpuBackendRuntime::create();
  ASSERT_TRUE(runtime.ok());
  const std::vector<TensorSpec> inputs = call_inputs();
  auto handle = (*runtime)->init(DelegateInit{blob, {}, inputs});
  ASSERT_TRUE(handle.ok()) << handle.status().to_string();
  EXPECT_EQ((*handle)->updated_inputs().size(), 1u);

  std::vector<float> x = {-2, -1, 0, 1, 2, 3, 4, 5};
  std::vector<float> cache(8, 0.0f);
  std::vector<float> rows = {7, 8};
  std::vector<int32_t> positions = {2};
  std::vector<float> w = t.weights;
  std::vector<float> h(6, NAN);
  std::vector<float> y(8, NAN);
  const std::vector<TensorView> in = {
      TensorView(x.data(), DType::kF32, inputs[0].shape), TensorView(cache.data(), DType::kF32, inputs[1].shape),
      TensorView(rows.data(), DType::kF32, inputs[2].shape), TensorView(positions.data(), DType::kI32, inputs[3].shape),
      TensorView(w.data(), DType::kF32, inputs[4].shape)};
  const Shape h_shape = {2, 3};
  const Shape y_shape = {2, 4};
  const std::vector<TensorView> out = {TensorView(h.data(), DType::kF32, h_shape),
                                       TensorView(y.data(), DType::kF32, y_shape)};
  ThreadPool pool(1);
  ASSERT_TRUE((*handle)->execute(in, out, KernelContext{&pool}).ok());
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_NEAR(y[i], silu(x[i]) * x[i], 1e-5) << i;
  }
  for (size_t r = 0; r < 2; ++r) {
    for (size_t n = 0; n < 3; ++n) {
      float expected = 0.0f;
      for (size_t k = 0; k < 4; ++k) expected += y[r * 4 + k] * w[n * 4 + k];
      EXPECT_NEAR(h[r * 3 + n], expected, 1e-5) << r << "," << n;
    }
  }
  EXPECT_EQ(cache[4], 7.0f);  // slot 2 of the one head: elements 4 and 5
  EXPECT_EQ(cache[5], 8.0f);
  EXPECT_EQ(cache[0], 0.0f);
}

}  // namespace
}  // namespace staticlm
