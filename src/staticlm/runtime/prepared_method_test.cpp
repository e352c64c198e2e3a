// SPDX-License-Identifier: Apache-2.0
// The one instruction-list verifier and executor: what PreparedMethod::prepare refuses (each with
// a message naming the instruction and value), what it allocates for an untrusted arena size, and
// that sessions over one prepared method share nothing mutable.
#include "staticlm/runtime/prepared_method.h"

#include <cmath>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

#include "staticlm/backends/portable/register.h"
#include "staticlm/core/thread_pool.h"
#include "staticlm/runtime/method_session.h"
#include "staticlm/runtime/named_data_test_util.h"

namespace staticlm {
namespace {

ValueSpec value(ValueStorage storage, uint64_t index, Shape shape = {4}, DType dtype = DType::kF32) {
  return ValueSpec{dtype, std::move(shape), storage, index, {}};
}

// values [in0: f32[4] input 0, a: f32[4] arena 0, out: f32[4] output 0]; a = silu(x); y = a + x.
MethodSpec baseline() {
  MethodSpec method;
  method.name = "forward";
  method.values = {value(ValueStorage::kInput, 0), value(ValueStorage::kArena, 0), value(ValueStorage::kOutput, 0)};
  method.inputs = {{"x", 0, false}};
  method.outputs = {{"y", 2, false}};
  method.arena_size = 64;
  method.instructions.push_back(KernelCallSpec{"silu", {0}, {1}, {}});
  method.instructions.push_back(KernelCallSpec{"add", {1, 0}, {2}, {}});
  return method;
}

class PreparedMethodTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(register_portable_kernels(kernels_).ok()); }

  Result<std::unique_ptr<PreparedMethod>> prepare(MethodSpec method) const {
    PrepareContext context;
    context.kernels = &kernels_;
    return PreparedMethod::prepare(std::move(method), context);
  }

  void expect_refused(MethodSpec method, std::string_view expected) const {
    auto prepared = prepare(std::move(method));
    ASSERT_FALSE(prepared.ok()) << "expected a refusal containing: " << expected;
    EXPECT_NE(prepared.status().message().find(expected), std::string::npos) << prepared.status().message();
  }

  KernelRegistry kernels_;
};

std::vector<float> run(const PreparedMethod& method, std::vector<float> x, ThreadPool* pool) {
  auto session = method.new_session(nullptr, pool);
  EXPECT_TRUE(session.ok()) << session.status().to_string();
  std::vector<float> y(x.size(), NAN);
  EXPECT_TRUE((*session)->bind_input("x", DType::kF32, x.data(), x.size() * 4).ok());
  EXPECT_TRUE((*session)->bind_output("y", DType::kF32, y.data(), y.size() * 4).ok());
  Status status = (*session)->execute();
  EXPECT_TRUE(status.ok()) << status.to_string();
  return y;
}

TEST_F(PreparedMethodTest, TheBaselineRunsAndRecordsItsKernels) {
  auto prepared = prepare(baseline());
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  ThreadPool pool(1);
  const std::vector<float> y = run(**prepared, {-1, 0, 1, 2}, &pool);
  for (size_t i = 0; i < 4; ++i) {
    const float x = static_cast<float>(i) - 1.0f;
    EXPECT_FLOAT_EQ(y[i], x / (1.0f + std::exp(-x)) + x) << i;
  }
  ASSERT_EQ((*prepared)->choices().size(), 2u);
  EXPECT_EQ((*prepared)->choices()[0].runner, "portable.silu");
  EXPECT_EQ((*prepared)->choices()[1].label, "instruction 1 (add)");
  // The same choices as `inspect --kernels` reports them, with the features they were made under.
  const KernelReport report = (*prepared)->kernel_report();
  EXPECT_EQ(report.features, CpuFeatures::host().to_string());
  ASSERT_EQ(report.nodes.size(), 2u);
  EXPECT_EQ(report.nodes[1].op, "add");
  EXPECT_EQ(report.nodes[1].kernel, "portable.add");
}

TEST_F(PreparedMethodTest, TheArenaIsWhatTheValuesReachNotWhatTheFileDeclares) {
  MethodSpec method = baseline();
  method.arena_size = uint64_t{1} << 40;  // would be a terabyte
  auto prepared = prepare(method);
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  EXPECT_EQ((*prepared)->arena_bytes(), 16u);
}

TEST_F(PreparedMethodTest, RefusesInconsistentInstructionLists) {
  {
    MethodSpec m = baseline();
    std::swap(m.instructions[0], m.instructions[1]);
    expect_refused(m, "method 'forward' instruction 0 (add): reads value 1 before any instruction writes it");
  }
  {
    MethodSpec m = baseline();
    m.instructions[0] = KernelCallSpec{"silu", {1}, {1}, {}};
    expect_refused(m, "instruction 0 (silu): output 0 is also one of its inputs");
  }
  {
    MethodSpec m = baseline();
    m.instructions.push_back(KernelCallSpec{"silu", {2}, {0}, {}});
    expect_refused(m, "instruction 2 (silu): writes value 0, which is an input not marked mutable");
  }
  {
    MethodSpec m = baseline();
    m.values[1].index = 8;
    expect_refused(m, "value 1: arena offset 8 (16 bytes) is not an aligned range of the arena (alignment 64)");
  }
  {
    MethodSpec m = baseline();
    m.instructions.pop_back();
    expect_refused(m, "method 'forward': output 'y' is never written");
  }
  {
    MethodSpec m = baseline();
    m.instructions[0] = KernelCallSpec{"sigmoid", {0}, {1}, {}};
    expect_refused(m, "instruction 0 (sigmoid): unknown op 'sigmoid'");
  }
  {
    MethodSpec m = baseline();
    m.instructions[0] = KernelCallSpec{"silu", {7}, {1}, {}};
    expect_refused(m, "instruction 0 (silu): value 7 is out of range (3 values)");
  }
  {
    MethodSpec m = baseline();
    m.values[2].shape = {2, 2};
    expect_refused(m, "instruction 1 (add): output 0 is declared f32[2,2] but the op produces f32[4]");
  }
  {
    MethodSpec m = baseline();
    m.values.push_back(value(ValueStorage::kArena, 64, {4}, static_cast<DType>(99)));
    expect_refused(m, "value 3: unknown dtype code 99");
  }
  {
    MethodSpec m = baseline();
    m.inputs[0].value = 1;
    expect_refused(m, "input 'x': value 1 is not stored as input 0");
  }
  {
    // A second value claiming input 0 would be read but never bound.
    MethodSpec m = baseline();
    m.values.push_back(value(ValueStorage::kInput, 0));
    m.instructions.push_back(KernelCallSpec{"add", {3, 0}, {2}, {}});
    expect_refused(m, "value 3: input 0 ('x') is value 0, not this one");
  }
  {
    MethodSpec m = baseline();
    m.arena_alignment = 48;
    expect_refused(m, "arena alignment 48 is not a power of two in [16, 4096]");
  }
  {
    MethodSpec m = baseline();
    m.values.push_back(value(ValueStorage::kConstant, 0));
    expect_refused(m, "value 3: a constant, but this method can have none");
  }
  {
    MethodSpec m = baseline();
    m.instructions.push_back(DelegateCallSpec{0, {0}, {2}});
    expect_refused(m, "instruction 2 (delegate 0): this method cannot call a delegate");
  }
}

TEST_F(PreparedMethodTest, AnInPlaceUpdateMustWriteItsInputAndTheInputMustBeMutable) {
  MethodSpec method;
  method.name = "update";
  method.values = {value(ValueStorage::kInput, 0, {1, 1, 4, 2}), value(ValueStorage::kInput, 1, {1, 1, 1, 2}),
                   value(ValueStorage::kInput, 2, {1}, DType::kI32), value(ValueStorage::kOutput, 0, {1, 1, 4, 2})};
  method.inputs = {{"cache", 0, true}, {"rows", 1, false}, {"positions", 2, false}};
  method.outputs = {{"copy", 3, false}};
  method.instructions.push_back(KernelCallSpec{"kv_cache_update", {0, 1, 2}, {0}, {}});
  method.instructions.push_back(KernelCallSpec{"reshape", {0}, {3}, Attributes{{"shape", Shape{1, 1, 4, 2}}}});
  ASSERT_TRUE(prepare(method).ok()) << prepare(method).status().to_string();
  MethodSpec elsewhere = method;
  std::get<KernelCallSpec>(elsewhere.instructions[0]).outputs = {3};
  expect_refused(elsewhere, "updates input 0 in place, so output 0 must be value 0, found value 3");
  MethodSpec read_only = method;
  read_only.inputs[0].is_mutable = false;
  expect_refused(read_only, "writes value 0, which is an input not marked mutable");
}

// A map holding `key` -> `values` (as f32 bytes).
testing::MemoryNamedData map_of(const std::string& key, const std::vector<float>& values) {
  testing::MemoryNamedData map;
  map.put_floats(key, values);
  return map;
}

TEST_F(PreparedMethodTest, NamedDataValuesAreResolvedAndSizeChecked) {
  MethodSpec method = baseline();
  ValueSpec bias = value(ValueStorage::kNamedData, 0);
  bias.key = "bias";
  method.values.push_back(bias);
  method.instructions[1] = KernelCallSpec{"add", {1, 3}, {2}, {}};
  PrepareContext context;
  context.kernels = &kernels_;
  const testing::MemoryNamedData good = map_of("bias", {10, 20, 30, 40});
  context.named_data = &good;
  auto prepared = PreparedMethod::prepare(method, context);
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  ThreadPool pool(1);
  const std::vector<float> y = run(**prepared, {0, 0, 0, 0}, &pool);
  EXPECT_EQ(y, (std::vector<float>{10, 20, 30, 40}));

  const testing::MemoryNamedData short_data = map_of("bias", {1, 2});
  context.named_data = &short_data;
  auto refused = PreparedMethod::prepare(method, context);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("value 3: needs 16 bytes, named data 'bias' holds 8"), std::string::npos)
      << refused.status().message();
  const testing::MemoryNamedData other = map_of("weight", {1, 2, 3, 4});
  context.named_data = &other;
  refused = PreparedMethod::prepare(method, context);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kNotFound);
  EXPECT_NE(refused.status().message().find("named data 'bias' is not in the test map"), std::string::npos)
      << refused.status().message();
}

// Two outputs sharing a first step, and a cache update nothing reads: y = silu(x) + x and
// z = 2 silu(silu(x)), the cache's row 1 set from `row`.
MethodSpec two_outputs() {
  MethodSpec method;
  method.name = "forward";
  method.values = {value(ValueStorage::kInput, 0),
                   value(ValueStorage::kArena, 0),
                   value(ValueStorage::kOutput, 0),
                   value(ValueStorage::kArena, 64),
                   value(ValueStorage::kOutput, 1),
                   value(ValueStorage::kInput, 1, {1, 1, 4, 2}),
                   value(ValueStorage::kInput, 2, {1, 1, 1, 2}),
                   value(ValueStorage::kInput, 3, {1}, DType::kI32)};
  method.inputs = {{"x", 0, false}, {"cache", 5, true}, {"row", 6, false}, {"position", 7, false}};
  method.outputs = {{"y", 2, false}, {"z", 4, false}};
  method.arena_size = 128;
  method.instructions.push_back(KernelCallSpec{"silu", {0}, {1}, {}});
  method.instructions.push_back(KernelCallSpec{"add", {1, 0}, {2}, {}});
  method.instructions.push_back(KernelCallSpec{"silu", {1}, {3}, {}});
  method.instructions.push_back(KernelCallSpec{"add", {3, 3}, {4}, {}});
  method.instructions.push_back(KernelCallSpec{"kv_cache_update", {5, 6, 7}, {5}, {}});
  return method;
}

TEST_F(PreparedMethodTest, AnUnwantedOutputSkipsTheStepsOnlyItNeeds) {
  auto prepared = prepare(two_outputs());
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  ThreadPool pool(1);
  auto session = (*prepared)->new_session(nullptr, &pool);
  ASSERT_TRUE(session.ok()) << session.status().to_string();
  std::vector<float> x = {-1, 0, 1, 2};
  std::vector<float> y(4, 0.0f);
  std::vector<float> z(4, 0.0f);
  std::vector<float> cache(8, 0.0f);
  std::vector<float> row = {5, 6};
  int32_t position = 1;
  MethodSession& s = **session;
  ASSERT_TRUE(s.bind_input("x", DType::kF32, x.data(), 16).ok());
  ASSERT_TRUE(s.bind_input("cache", DType::kF32, cache.data(), 32).ok());
  ASSERT_TRUE(s.bind_input("row", DType::kF32, row.data(), 8).ok());
  ASSERT_TRUE(s.bind_input("position", DType::kI32, &position, 4).ok());
  ASSERT_TRUE(s.bind_output("y", DType::kF32, y.data(), 16).ok());
  ASSERT_TRUE(s.bind_output("z", DType::kF32, z.data(), 16).ok());
  OpProfile profile;
  s.set_op_profile(&profile);
  auto calls = [&](std::string_view op) {
    int64_t count = 0;
    for (const OpProfile::Entry& e : profile.entries()) {
      count += e.op == op ? e.calls : 0;
    }
    return count;
  };
  auto silu = [](float v) { return v / (1.0f + std::exp(-v)); };

  ASSERT_TRUE(s.execute(std::vector<RowNeed>{RowNeed::kAll, RowNeed::kNone}).ok());
  EXPECT_EQ(calls("silu"), 1);  // z's own silu skipped, the shared one run
  EXPECT_EQ(calls("add"), 1);
  EXPECT_EQ(calls("kv_cache_update"), 1);  // it writes an input in place: it always runs
  EXPECT_EQ(z, std::vector<float>(4, 0.0f));
  EXPECT_EQ(cache, (std::vector<float>{0, 0, 5, 6, 0, 0, 0, 0}));
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(y[i], silu(x[i]) + x[i]) << i;
  }

  profile.clear();
  std::fill(y.begin(), y.end(), 0.0f);
  position = 2;
  ASSERT_TRUE(s.execute(std::vector<RowNeed>{RowNeed::kNone, RowNeed::kAll}).ok());
  EXPECT_EQ(calls("silu"), 2);
  EXPECT_EQ(calls("add"), 1);
  EXPECT_EQ(y, std::vector<float>(4, 0.0f));
  EXPECT_EQ(cache, (std::vector<float>{0, 0, 5, 6, 5, 6, 0, 0}));
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(z[i], 2.0f * silu(silu(x[i]))) << i;
  }

  // Values whose rows are not a chunk's (this method reads no positions) have no last row to
  // narrow to: a last-row need is a need for all of them.
  profile.clear();
  ASSERT_TRUE(s.execute(std::vector<RowNeed>{RowNeed::kLastRow, RowNeed::kAll}).ok());
  EXPECT_EQ(calls("silu") + calls("add") + calls("kv_cache_update"), 5);

  Status wrong = s.execute(std::vector<RowNeed>{RowNeed::kAll});
  EXPECT_EQ(wrong.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.message().find("expected a need per output (2), found 1"), std::string::npos) << wrong.message();
}

TEST_F(PreparedMethodTest, SessionsShareNothingMutable) {
  auto prepared = prepare(baseline());
  ASSERT_TRUE(prepared.ok());
  ThreadPool pool(2);
  std::vector<std::vector<float>> results(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int call = 0; call < 50; ++call) {
        const float base = static_cast<float>(t);
        results[t] = run(**prepared, {base, base + 1, base + 2, base + 3}, &pool);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (size_t t = 0; t < results.size(); ++t) {
    ThreadPool alone(1);
    const float base = static_cast<float>(t);
    EXPECT_EQ(results[t], run(**prepared, {base, base + 1, base + 2, base + 3}, &alone)) << t;
  }
}

}  // namespace
}  // namespace staticlm
