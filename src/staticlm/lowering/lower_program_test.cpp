// SPDX-License-Identifier: Apache-2.0
// The one lowering: a plain method is its one-step-per-node schedule; a delegate step becomes one
// call over its boundary values, and values only the delegate touches never appear; constants are
// program constants or named data; outputs follow the requested order.
#include "staticlm/lowering/lower_program.h"

#include <gtest/gtest.h>

namespace staticlm {
namespace {

struct Chain {
  std::unique_ptr<Graph> graph;
  ValueId x, a, b, c, d, w;
};

// x -> a = linear(x, w) -> b = silu(a) -> c = silu(b) -> d = add(c, a); outputs d and c.
Chain chain() {
  Chain out;
  auto constants = std::make_shared<ConstantTable>();
  const ConstantId w_id = *constants->add("w", DType::kF32, {4, 4}, make_owned_source(std::vector<uint8_t>(64)));
  out.graph = std::make_unique<Graph>(constants);
  Graph& g = *out.graph;
  out.x = *g.add_input("x", DType::kF32, {1, 4});
  out.w = *g.use_constant(w_id);
  out.a = *g.add(OpKind::kLinear, {out.x, out.w});
  out.b = *g.add(OpKind::kSilu, {out.a});
  out.c = *g.add(OpKind::kSilu, {out.b});
  out.d = *g.add(OpKind::kAdd, {out.c, out.a});
  EXPECT_TRUE(g.add_output("d", out.d).ok());
  EXPECT_TRUE(g.add_output("c", out.c).ok());
  return out;
}

TEST(LowerProgramTest, APlainMethodIsOneKernelCallPerNode) {
  Chain t = chain();
  const std::vector<MethodGraph> methods = {{"forward", t.graph.get()}};
  auto spec = lower_to_program(methods, {});
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  ASSERT_EQ(spec->constants.size(), 1u);
  const MethodSpec& method = spec->methods[0];
  ASSERT_EQ(method.instructions.size(), 4u);
  EXPECT_EQ(std::get<KernelCallSpec>(method.instructions[0]).op, "linear");
  EXPECT_EQ(method.values.size(), 6u);  // x, w, a, b, c, d
  EXPECT_EQ(method.outputs[0].name, "d");
}

TEST(LowerProgramTest, ADelegateStepIsOneCallAndItsPrivateValuesDisappear) {
  Chain t = chain();
  ScheduledMethod method{"forward", t.graph.get(), {}, {}};
  ScheduleStep kernel;
  kernel.node = 0;
  ScheduleStep delegate;
  delegate.inputs = {t.a};
  delegate.outputs = {t.c};
  ScheduleStep last;
  last.node = 3;
  method.steps = {kernel, delegate, last};
  method.step_delegate = {0, 0, 0};
  DelegateSpec payload;
  payload.backend_id = "test";
  payload.blob = make_owned_source(std::vector<uint8_t>{1, 2, 3});
  std::vector<DelegateSpec> delegates = {payload};
  auto spec = lower_program(std::span(&method, 1), delegates, {}, {});
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  const MethodSpec& lowered = spec->methods[0];
  ASSERT_EQ(lowered.instructions.size(), 3u);
  const auto& call = std::get<DelegateCallSpec>(lowered.instructions[1]);
  EXPECT_EQ(call.inputs.size(), 1u);
  EXPECT_EQ(call.outputs.size(), 1u);
  EXPECT_EQ(lowered.values.size(), 5u) << "b belongs to the delegate";
  // c is a method output: the delegate writes the caller's buffer.
  EXPECT_EQ(lowered.values[call.outputs[0]].storage, ValueStorage::kOutput);

  std::vector<DelegateSpec> none;
  EXPECT_NE(lower_program(std::span(&method, 1), none, {}, {}).status().message().find("its delegate does not exist"),
            std::string::npos);
}

TEST(LowerProgramTest, ConstantsBecomeNamedDataAndOutputsFollowTheOrder) {
  Chain t = chain();
  ScheduledMethod method{"blob", t.graph.get(), one_step_per_node(*t.graph), {}};
  MethodLoweringOptions options;
  options.constants.named_data_key = [](ConstantId) { return std::string("pack/w"); };
  options.output_order = {1, 0};
  auto lowered = lower_method(method, options);
  ASSERT_TRUE(lowered.ok()) << lowered.status().to_string();
  EXPECT_EQ(lowered->outputs[0].name, "c");
  EXPECT_EQ(lowered->outputs[1].name, "d");
  bool found = false;
  for (const ValueSpec& value : lowered->values) {
    if (value.storage == ValueStorage::kNamedData) {
      EXPECT_EQ(value.key, "pack/w");
      found = true;
    }
    EXPECT_NE(value.storage, ValueStorage::kConstant);
  }
  EXPECT_TRUE(found);
  options.output_order = {0, 0};
  EXPECT_NE(lower_method(method, options).status().message().find("output order is not a permutation"),
            std::string::npos);
  ScheduledMethod twice{"twice", t.graph.get(), one_step_per_node(*t.graph), {}};
  twice.steps.push_back(twice.steps[0]);
  options.output_order.clear();
  EXPECT_NE(lower_method(twice, options).status().message().find("node 0 is scheduled twice"), std::string::npos);
}

}  // namespace
}  // namespace staticlm
