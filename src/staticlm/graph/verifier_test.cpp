// SPDX-License-Identifier: Apache-2.0
#include "staticlm/graph/verifier.h"

#include <memory>
#include <string>
#include <utility>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

// The value of a builder call that must succeed; a failure is reported and yields kNoValue,
// which makes the following builder calls fail too.
ValueId must(const Result<ValueId>& result) {
  EXPECT_TRUE(result.ok()) << result.status().to_string();
  return result.ok() ? *result : kNoValue;
}

void expect_refused(const Graph& graph, std::initializer_list<std::string_view> pieces) {
  Status status = verify_graph(graph);
  ASSERT_FALSE(status.ok()) << "the verifier accepted the graph";
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  for (std::string_view piece : pieces) {
    EXPECT_NE(status.message().find(piece), std::string::npos) << "'" << piece << "' not in: " << status.message();
  }
}

// x -> silu -> a -> silu -> b, output b.
struct Chain {
  Graph graph{std::make_shared<ConstantTable>()};
  ValueId x = kNoValue;
  ValueId a = kNoValue;
  ValueId b = kNoValue;
};

Chain make_chain() {
  Chain chain;
  chain.x = must(chain.graph.add_input("x", DType::kF32, {2, 3}));
  chain.a = must(chain.graph.add(OpKind::kSilu, {chain.x}, {}, "first"));
  chain.b = must(chain.graph.add(OpKind::kSilu, {chain.a}, {}, "second"));
  EXPECT_TRUE(chain.graph.add_output("b", chain.b).ok());
  return chain;
}

// A decode step's cache handling: cache [1,2,4,2] updated in place with one row.
struct CacheGraph {
  Graph graph{std::make_shared<ConstantTable>()};
  ValueId cache = kNoValue;
  ValueId rows = kNoValue;
  ValueId positions = kNoValue;
  ValueId query = kNoValue;
};

CacheGraph make_cache_graph() {
  CacheGraph g;
  g.cache = must(g.graph.add_input("cache", DType::kF32, {1, 2, 4, 2}));
  g.rows = must(g.graph.add_input("rows", DType::kF32, {1, 1, 2, 2}));
  g.positions = must(g.graph.add_input("positions", DType::kI32, {1}));
  g.query = must(g.graph.add_input("query", DType::kF32, {1, 1, 2, 2}));
  return g;
}

TEST(VerifierTest, AcceptsWellFormedGraphs) {
  Chain chain = make_chain();
  EXPECT_TRUE(verify_graph(chain.graph).ok()) << verify_graph(chain.graph).to_string();

  CacheGraph g = make_cache_graph();
  const ValueId updated = must(g.graph.add(OpKind::kKvCacheUpdate, {g.cache, g.rows, g.positions}));
  const ValueId attended = must(g.graph.add(OpKind::kAttention, {g.query, updated, updated, g.positions}));
  ASSERT_TRUE(g.graph.add_output("attended", attended).ok());
  ASSERT_TRUE(g.graph.add_output("cache_out", updated).ok());
  EXPECT_TRUE(verify_graph(g.graph).ok()) << verify_graph(g.graph).to_string();
}

TEST(VerifierTest, RefusesADanglingInput) {
  Chain chain = make_chain();
  chain.graph.mutable_nodes()[1].inputs[0] = 99;
  expect_refused(chain.graph, {"node 1 (op 'silu', name 'second')", "input 0 refers to value 99", "does not exist"});
}

TEST(VerifierTest, RefusesAUseBeforeDefinition) {
  Chain chain = make_chain();
  // A pass that reordered the nodes without fixing the order: node 0 now reads node 1's output.
  std::swap(chain.graph.mutable_nodes()[0], chain.graph.mutable_nodes()[1]);
  chain.graph.mutable_values()[static_cast<size_t>(chain.a)].producer = 1;
  chain.graph.mutable_values()[static_cast<size_t>(chain.b)].producer = 0;
  expect_refused(chain.graph, {"node 0 (op 'silu', name 'second')",
                               "reads value 1 before node 1 (op 'silu', name 'first')", "topological order"});
}

TEST(VerifierTest, RefusesACycle) {
  Chain chain = make_chain();
  // first reads second's output: first -> second -> first.
  chain.graph.mutable_nodes()[0].inputs[0] = chain.b;
  expect_refused(chain.graph, {"node 0 (op 'silu', name 'first')", "reads value 2 before node 1"});

  Chain self = make_chain();
  self.graph.mutable_nodes()[0].inputs[0] = self.a;
  expect_refused(self.graph, {"node 0 (op 'silu', name 'first')", "reads value 1 before node 0"});
}

TEST(VerifierTest, RefusesAnOutputShapeThatNoLongerMatches) {
  Chain chain = make_chain();
  // A pass changed the first node's input without re-inferring its output.
  const ValueId wide = must(chain.graph.add_input("wide", DType::kF32, {2, 4}));
  chain.graph.mutable_nodes()[0].inputs[0] = wide;
  expect_refused(chain.graph,
                 {"node 0 (op 'silu', name 'first')", "output 0 (value 1) is f32[2,3]", "its inputs give f32[2,4]"});
}

TEST(VerifierTest, RefusesAttributesThatNoLongerTypeCheck) {
  Chain chain = make_chain();
  chain.graph.mutable_nodes()[1].op = OpKind::kSoftmax;
  chain.graph.mutable_nodes()[1].attributes.set("axis", int64_t{5});
  expect_refused(chain.graph, {"node 1 (op 'softmax', name 'second')", "axis 5 is out of range for rank 2"});
}

TEST(VerifierTest, RefusesAValueProducedTwice) {
  Chain chain = make_chain();
  chain.graph.mutable_nodes()[1].outputs[0] = chain.a;
  expect_refused(chain.graph, {"node 1 (op 'silu', name 'second')", "value 1, already defined by node 0"});
}

TEST(VerifierTest, RefusesANodeOutputThatNamesAnotherProducer) {
  Chain chain = make_chain();
  chain.graph.mutable_values()[static_cast<size_t>(chain.b)].producer = 0;
  expect_refused(chain.graph, {"node 1 (op 'silu', name 'second')", "records node 0 as its producer"});
}

TEST(VerifierTest, RefusesReadingAValueNoNodeProduces) {
  Chain chain = make_chain();
  const ValueId orphan = chain.graph.new_value(DType::kF32, {2, 3}, 5);
  chain.graph.mutable_nodes()[1].inputs[0] = orphan;
  expect_refused(chain.graph, {"node 1 (op 'silu', name 'second')", "reads value 3, which no node produces"});
}

TEST(VerifierTest, RefusesReadingAnInPlaceInputAfterTheUpdate) {
  CacheGraph g = make_cache_graph();
  const ValueId updated = must(g.graph.add(OpKind::kKvCacheUpdate, {g.cache, g.rows, g.positions}, {}, "cache_write"));
  // Attention reads the stale cache, whose bytes the update has already overwritten.
  const ValueId attended = must(g.graph.add(OpKind::kAttention, {g.query, g.cache, g.cache, g.positions}));
  ASSERT_TRUE(g.graph.add_output("attended", attended).ok());
  ASSERT_TRUE(g.graph.add_output("cache_out", updated).ok());
  expect_refused(g.graph, {"node 0 (op 'kv_cache_update', name 'cache_write')", "updates value 0 in place",
                           "node 1 (op 'attention') reads it afterwards"});
}

TEST(VerifierTest, AcceptsReadingTheInputOfACopyingUpdate) {
  CacheGraph g = make_cache_graph();
  const ValueId updated =
      must(g.graph.add(OpKind::kKvCacheUpdate, {g.cache, g.rows, g.positions}, Attributes{{"in_place", int64_t{0}}}));
  const ValueId attended = must(g.graph.add(OpKind::kAttention, {g.query, g.cache, g.cache, g.positions}));
  ASSERT_TRUE(g.graph.add_output("attended", attended).ok());
  ASSERT_TRUE(g.graph.add_output("cache_out", updated).ok());
  EXPECT_TRUE(verify_graph(g.graph).ok()) << verify_graph(g.graph).to_string();
}

TEST(VerifierTest, RefusesAnInPlaceInputThatIsAlsoAnotherOperand) {
  CacheGraph g = make_cache_graph();
  // rows [1, S=2, H=2, D=2] has the same shape as a cache [1, H=2, C=2, D=2].
  const ValueId cache = must(g.graph.add_input("square_cache", DType::kF32, {1, 2, 2, 2}));
  const ValueId positions = must(g.graph.add_input("two_positions", DType::kI32, {2}));
  const ValueId updated = must(g.graph.add(OpKind::kKvCacheUpdate, {cache, cache, positions}));
  ASSERT_TRUE(g.graph.add_output("cache_out", updated).ok());
  expect_refused(g.graph, {"node 0 (op 'kv_cache_update')", "updates value 4 in place and also reads it as input 1"});
}

TEST(VerifierTest, RefusesAnInPlaceInputThatIsAGraphOutput) {
  CacheGraph g = make_cache_graph();
  const ValueId copy = must(g.graph.add(OpKind::kAdd, {g.cache, g.cache}));
  const ValueId updated = must(g.graph.add(OpKind::kKvCacheUpdate, {copy, g.rows, g.positions}));
  ASSERT_TRUE(g.graph.add_output("before", copy).ok());
  ASSERT_TRUE(g.graph.add_output("after", updated).ok());
  expect_refused(g.graph,
                 {"node 1 (op 'kv_cache_update')", "updates value 4 in place", "graph output 'before' is that value"});
}

// qkv_rope_cache updates two caches in place: each is checked as kv_cache_update's one is.
TEST(VerifierTest, ChecksBothCachesOfAQkvRopeCache) {
  auto qkv = [](CacheGraph& g, ValueId k_cache, ValueId v_cache) {
    const ValueId x = must(g.graph.add_input("x", DType::kF32, {1, 1, 4}));
    std::vector<ValueId> inputs = {x};
    for (const char* name : {"wq", "wk", "wv"}) {
      inputs.push_back(must(g.graph.add_input(name, DType::kF32, {4, 4})));
    }
    inputs.insert(inputs.end(), {k_cache, v_cache, g.positions});
    auto outputs = g.graph.add_node(OpKind::kQkvRopeCache, inputs, {{"theta", 10000.0}}, "qkv");
    EXPECT_TRUE(outputs.ok()) << outputs.status().to_string();
    return outputs.ok() ? *outputs : std::vector<ValueId>(3, kNoValue);
  };
  {
    CacheGraph g = make_cache_graph();
    const ValueId v_cache = must(g.graph.add_input("v_cache", DType::kF32, {1, 2, 4, 2}));
    const std::vector<ValueId> out = qkv(g, g.cache, v_cache);
    const ValueId attended = must(g.graph.add(OpKind::kAttention, {out[0], out[1], out[2], g.positions}));
    ASSERT_TRUE(g.graph.add_output("attended", attended).ok());
    EXPECT_TRUE(verify_graph(g.graph).ok()) << verify_graph(g.graph).to_string();
  }
  {
    CacheGraph g = make_cache_graph();
    const std::vector<ValueId> out = qkv(g, g.cache, g.cache);
    ASSERT_TRUE(g.graph.add_output("queries", out[0]).ok());
    expect_refused(
        g.graph, {"node 0 (op 'qkv_rope_cache', name 'qkv')", "updates value 0 in place and also reads it as input 5"});
  }
  {
    CacheGraph g = make_cache_graph();
    const ValueId v_cache = must(g.graph.add_input("v_cache", DType::kF32, {1, 2, 4, 2}));
    const std::vector<ValueId> out = qkv(g, g.cache, v_cache);
    // Attention reads the value cache as it was, after the update overwrote it.
    const ValueId attended = must(g.graph.add(OpKind::kAttention, {out[0], out[1], v_cache, g.positions}));
    ASSERT_TRUE(g.graph.add_output("attended", attended).ok());
    expect_refused(g.graph, {"node 0 (op 'qkv_rope_cache', name 'qkv')", "updates value 4 in place",
                             "node 1 (op 'attention') reads it afterwards"});
  }
}

TEST(VerifierTest, RefusesAGraphOutputThatIsAGraphInput) {
  Chain chain = make_chain();
  ASSERT_TRUE(chain.graph.add_output("echo", chain.x).ok());
  expect_refused(chain.graph, {"graph output 1 'echo'", "is graph input 'x'", "outputs must be node outputs"});
}

TEST(VerifierTest, RefusesAGraphOutputThatIsAConstant) {
  auto table = std::make_shared<ConstantTable>();
  auto id = table->add("bias", DType::kF32, {2}, make_owned_source(std::vector<uint8_t>(8)));
  ASSERT_TRUE(id.ok());
  Graph graph(table);
  const ValueId bias = must(graph.use_constant(*id));
  ASSERT_TRUE(graph.add_output("bias_out", bias).ok());
  expect_refused(graph, {"graph output 0 'bias_out'", "is constant 'bias'"});
}

TEST(VerifierTest, RefusesTwoOutputsOfOneValue) {
  Chain chain = make_chain();
  ASSERT_TRUE(chain.graph.add_output("b_again", chain.b).ok());
  expect_refused(chain.graph, {"graph output 1 'b_again'", "value 2 is already another graph output"});
}

TEST(VerifierTest, RefusesAConstantValueThatDisagreesWithItsTable) {
  auto table = std::make_shared<ConstantTable>();
  auto id = table->add("scale", DType::kF32, {2}, make_owned_source(std::vector<uint8_t>(8)));
  ASSERT_TRUE(id.ok());
  Graph graph(table);
  const ValueId scale = must(graph.use_constant(*id));
  graph.mutable_values()[static_cast<size_t>(scale)].shape = {3};
  expect_refused(graph, {"value 0: constant 'scale' is f32[2], the value says f32[3]"});
}

}  // namespace
}  // namespace staticlm
