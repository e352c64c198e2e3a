// SPDX-License-Identifier: Apache-2.0
#include "staticlm/graph/memory_planner.h"

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/graph/verifier.h"

namespace staticlm {
namespace {

ValueId must(const Result<ValueId>& result) {
  EXPECT_TRUE(result.ok()) << result.status().to_string();
  return result.ok() ? *result : kNoValue;
}

const PlannedValue& planned(const MemoryPlan& plan, ValueId value) {
  return plan.values[static_cast<size_t>(value)];
}

bool bytes_overlap(const PlannedValue& a, const PlannedValue& b) {
  return a.size != 0 && b.size != 0 && a.offset < b.offset + b.size && b.offset < a.offset + a.size;
}

TEST(MemoryPlannerTest, ReusesTheBytesOfADeadValue) {
  Graph graph(std::make_shared<ConstantTable>());
  const ValueId x = must(graph.add_input("x", DType::kF32, {4, 16}));  // 256 bytes
  const ValueId a = must(graph.add(OpKind::kSilu, {x}));
  const ValueId b = must(graph.add(OpKind::kSilu, {a}));
  const ValueId c = must(graph.add(OpKind::kSilu, {b}));
  const ValueId d = must(graph.add(OpKind::kSilu, {c}));
  ASSERT_TRUE(graph.add_output("d", d).ok());
  ASSERT_TRUE(verify_graph(graph).ok());

  auto plan = plan_memory(graph, 64);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->alignment, 64u);
  for (ValueId v : {a, b, c}) {
    EXPECT_TRUE(planned(*plan, v).in_arena) << "value " << v;
    EXPECT_EQ(planned(*plan, v).size, 256u);
  }
  // a is dead once b exists, so c can take its place; b is live next to both.
  EXPECT_EQ(planned(*plan, a).offset, planned(*plan, c).offset);
  EXPECT_FALSE(bytes_overlap(planned(*plan, a), planned(*plan, b)));
  EXPECT_FALSE(bytes_overlap(planned(*plan, b), planned(*plan, c)));
  EXPECT_EQ(plan->arena_size, 512u);

  EXPECT_EQ(planned(*plan, a).first_step, 0);
  EXPECT_EQ(planned(*plan, a).last_step, 1);
  EXPECT_EQ(planned(*plan, c).first_step, 2);
  EXPECT_EQ(planned(*plan, c).last_step, 3);

  const PlannedValue& output = planned(*plan, d);
  EXPECT_FALSE(output.in_arena);
  EXPECT_EQ(output.size, 256u);
  EXPECT_EQ(output.first_step, 3);
  EXPECT_EQ(output.last_step, 3);
  const PlannedValue& input = planned(*plan, x);
  EXPECT_FALSE(input.in_arena);
  EXPECT_EQ(input.size, 256u);
  EXPECT_EQ(input.first_step, -1);
  EXPECT_EQ(input.last_step, 0);
  EXPECT_EQ(output.alias_root, kNoValue);
}

// x -> a = silu(x) -> r = reshape(a) -> b = silu(r) -> c = silu(b), with a read again by d in
// the second graph: the reshape writes into a's bytes only where it is a's last reader.
TEST(MemoryPlannerTest, AReshapeThatIsItsInputsLastReaderTakesItsBytes) {
  for (const bool read_again : {false, true}) {
    SCOPED_TRACE(read_again ? "a read after the reshape" : "the reshape a's last reader");
    Graph graph(std::make_shared<ConstantTable>());
    const ValueId x = must(graph.add_input("x", DType::kF32, {4, 16}));
    const ValueId a = must(graph.add(OpKind::kSilu, {x}));
    const ValueId r = must(graph.add(OpKind::kReshape, {a}, Attributes{{"shape", std::vector<int64_t>{64}}}));
    const ValueId b = must(graph.add(OpKind::kSilu, {r}));
    const ValueId c = must(graph.add(OpKind::kSilu, {b}));
    ValueId last = c;
    if (read_again) {
      const ValueId d = must(graph.add(OpKind::kSilu, {a}));
      last = must(graph.add(
          OpKind::kAdd, {c, must(graph.add(OpKind::kReshape, {d}, Attributes{{"shape", std::vector<int64_t>{64}}}))}));
    }
    ASSERT_TRUE(graph.add_output("out", last).ok());
    ASSERT_TRUE(verify_graph(graph).ok());
    auto plan = plan_memory(graph, 64);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    const PlannedValue& reshaped = planned(*plan, r);
    EXPECT_TRUE(reshaped.in_arena);
    if (!read_again) {
      EXPECT_EQ(reshaped.view_of, a);
      EXPECT_EQ(reshaped.offset, planned(*plan, a).offset);
      EXPECT_EQ(planned(*plan, a).last_step, reshaped.last_step);  // a's bytes live as long as r
      EXPECT_FALSE(bytes_overlap(planned(*plan, a), planned(*plan, b)));
    } else {
      EXPECT_EQ(reshaped.view_of, kNoValue);
      EXPECT_FALSE(bytes_overlap(planned(*plan, a), reshaped));
    }
  }
}

// A reshape of a graph input, or one whose output is a graph output, copies: the caller owns
// those bytes.
TEST(MemoryPlannerTest, AReshapeOfCallerMemoryCopies) {
  Graph graph(std::make_shared<ConstantTable>());
  const ValueId x = must(graph.add_input("x", DType::kF32, {4, 16}));
  const ValueId r = must(graph.add(OpKind::kReshape, {x}, Attributes{{"shape", std::vector<int64_t>{64}}}));
  const ValueId a = must(graph.add(OpKind::kSilu, {r}));
  const ValueId out = must(graph.add(OpKind::kReshape, {a}, Attributes{{"shape", std::vector<int64_t>{4, 16}}}));
  ASSERT_TRUE(graph.add_output("out", out).ok());
  ASSERT_TRUE(verify_graph(graph).ok());
  auto plan = plan_memory(graph, 64);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(planned(*plan, r).view_of, kNoValue);
  EXPECT_TRUE(planned(*plan, r).in_arena);
  EXPECT_EQ(planned(*plan, out).view_of, kNoValue);
  EXPECT_FALSE(planned(*plan, out).in_arena);
}

TEST(MemoryPlannerTest, AValueNobodyReadsStillOccupiesItsProducer) {
  Graph graph(std::make_shared<ConstantTable>());
  const ValueId x = must(graph.add_input("x", DType::kF32, {8}));
  const ValueId unused = must(graph.add(OpKind::kGelu, {x}));
  const ValueId kept = must(graph.add(OpKind::kSilu, {x}));
  const ValueId out = must(graph.add(OpKind::kSilu, {kept}));
  ASSERT_TRUE(graph.add_output("out", out).ok());

  auto plan = plan_memory(graph, 16);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_TRUE(planned(*plan, unused).in_arena);
  EXPECT_EQ(planned(*plan, unused).first_step, 0);
  EXPECT_EQ(planned(*plan, unused).last_step, 0);
  // Lifetimes [0,0] and [1,2] do not overlap: one 32-byte slot serves both.
  EXPECT_EQ(planned(*plan, unused).offset, planned(*plan, kept).offset);
  EXPECT_EQ(plan->arena_size, 32u);
}

TEST(MemoryPlannerTest, OffsetsFollowTheAlignment) {
  Graph graph(std::make_shared<ConstantTable>());
  const ValueId x = must(graph.add_input("x", DType::kF32, {3}));  // 12 bytes
  const ValueId a = must(graph.add(OpKind::kSilu, {x}));
  const ValueId b = must(graph.add(OpKind::kSilu, {x}));
  const ValueId sum = must(graph.add(OpKind::kAdd, {a, b}));
  ASSERT_TRUE(graph.add_output("sum", sum).ok());
  auto plan = plan_memory(graph, 256);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(planned(*plan, a).offset % 256, 0u);
  EXPECT_EQ(planned(*plan, b).offset % 256, 0u);
  EXPECT_NE(planned(*plan, a).offset, planned(*plan, b).offset);
  EXPECT_EQ(plan->arena_size, 512u);
}

TEST(MemoryPlannerTest, RefusesAnAlignmentThatIsNotAPowerOfTwo) {
  Graph graph(std::make_shared<ConstantTable>());
  for (uint32_t alignment : {0u, 3u, 48u}) {
    auto plan = plan_memory(graph, alignment);
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(plan.status().message().find("alignment " + std::to_string(alignment) + " is not a power of two"),
              std::string::npos);
  }
}

TEST(MemoryPlannerTest, EmptyGraphNeedsNoArena) {
  Graph graph(std::make_shared<ConstantTable>());
  auto plan = plan_memory(graph);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->arena_size, 0u);
  EXPECT_TRUE(plan->values.empty());
}

// cache [1,2,4,2] f32 (64 bytes), rows [1,1,2,2], positions [1], query [1,1,2,2].
struct CacheInputs {
  ValueId cache;
  ValueId rows;
  ValueId positions;
  ValueId query;
};

CacheInputs add_cache_inputs(Graph& graph) {
  return {must(graph.add_input("cache", DType::kF32, {1, 2, 4, 2})),
          must(graph.add_input("rows", DType::kF32, {1, 1, 2, 2})),
          must(graph.add_input("positions", DType::kI64, {1})),
          must(graph.add_input("query", DType::kF32, {1, 1, 2, 2}))};
}

TEST(MemoryPlannerTest, InPlaceUpdateOfAnInputLivesInTheInputBuffer) {
  Graph graph(std::make_shared<ConstantTable>());
  const CacheInputs in = add_cache_inputs(graph);
  const ValueId first = must(graph.add(OpKind::kKvCacheUpdate, {in.cache, in.rows, in.positions}));
  const ValueId second = must(graph.add(OpKind::kKvCacheUpdate, {first, in.rows, in.positions}));
  ASSERT_TRUE(graph.add_output("cache_out", second).ok());
  ASSERT_TRUE(verify_graph(graph).ok()) << verify_graph(graph).to_string();

  auto plan = plan_memory(graph);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->arena_size, 0u);
  for (ValueId alias : {first, second}) {
    EXPECT_FALSE(planned(*plan, alias).in_arena);
    EXPECT_EQ(planned(*plan, alias).alias_root, in.cache);
    EXPECT_EQ(planned(*plan, alias).size, 64u);
  }
  EXPECT_EQ(planned(*plan, first).first_step, 0);
  EXPECT_EQ(planned(*plan, first).last_step, 1);
}

TEST(MemoryPlannerTest, AnArenaChainStaysLiveUntilItsLastMemberIsRead) {
  Graph graph(std::make_shared<ConstantTable>());
  const CacheInputs in = add_cache_inputs(graph);
  const ValueId scratch_cache = must(graph.add(OpKind::kAdd, {in.cache, in.cache}));                        // node 0
  const ValueId updated = must(graph.add(OpKind::kKvCacheUpdate, {scratch_cache, in.rows, in.positions}));  // node 1
  const ValueId scaled_query = must(graph.add(OpKind::kSilu, {in.query}));                                  // node 2
  const ValueId query_again = must(graph.add(OpKind::kSilu, {scaled_query}));                               // node 3
  const ValueId attended = must(graph.add(OpKind::kAttention, {query_again, updated, updated, in.positions}));  // 4
  ASSERT_TRUE(graph.add_output("attended", attended).ok());
  ASSERT_TRUE(verify_graph(graph).ok()) << verify_graph(graph).to_string();

  auto plan = plan_memory(graph);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  const PlannedValue& root = planned(*plan, scratch_cache);
  EXPECT_TRUE(root.in_arena);
  EXPECT_EQ(root.first_step, 0);
  EXPECT_EQ(root.last_step, 4);  // attention reads the alias at node 4
  EXPECT_FALSE(planned(*plan, updated).in_arena);
  EXPECT_EQ(planned(*plan, updated).alias_root, scratch_cache);
  EXPECT_EQ(planned(*plan, updated).first_step, 1);
  EXPECT_EQ(planned(*plan, updated).last_step, 4);
  // Both query temporaries are created while the cache chain is live.
  EXPECT_FALSE(bytes_overlap(root, planned(*plan, scaled_query)));
  EXPECT_FALSE(bytes_overlap(root, planned(*plan, query_again)));
}

TEST(MemoryPlannerTest, AChainEndingInAGraphOutputLivesInTheOutputBuffer) {
  Graph graph(std::make_shared<ConstantTable>());
  const CacheInputs in = add_cache_inputs(graph);
  const ValueId fresh = must(graph.add(OpKind::kMul, {in.cache, in.cache}));
  const ValueId updated = must(graph.add(OpKind::kKvCacheUpdate, {fresh, in.rows, in.positions}));
  ASSERT_TRUE(graph.add_output("new_cache", updated).ok());
  ASSERT_TRUE(verify_graph(graph).ok());
  auto plan = plan_memory(graph);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_FALSE(planned(*plan, fresh).in_arena);
  EXPECT_FALSE(planned(*plan, updated).in_arena);
  EXPECT_EQ(planned(*plan, updated).alias_root, fresh);
  EXPECT_EQ(plan->arena_size, 0u);
}

TEST(MemoryPlannerTest, RefusesAnInPlaceUpdateOfAConstant) {
  auto table = std::make_shared<ConstantTable>();
  auto id = table->add("frozen_cache", DType::kF32, {1, 2, 4, 2}, make_owned_source(std::vector<uint8_t>(64)));
  ASSERT_TRUE(id.ok());
  Graph graph(table);
  const CacheInputs in = add_cache_inputs(graph);
  const ValueId frozen = must(graph.use_constant(*id));
  const ValueId updated = must(graph.add(OpKind::kKvCacheUpdate, {frozen, in.rows, in.positions}));
  ASSERT_TRUE(graph.add_output("cache_out", updated).ok());
  auto plan = plan_memory(graph);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("node 0 (op 'kv_cache_update'): updates constant 'frozen_cache' in place"),
            std::string::npos)
      << plan.status().message();
}

TEST(MemoryPlannerTest, ReportsAValueTooLargeToAddress) {
  Graph graph(std::make_shared<ConstantTable>());
  // 2^59 i64 elements are 2^62 bytes; four of them concatenated are 2^64 bytes.
  const ValueId x = must(graph.add_input("x", DType::kI64, {int64_t{1} << 59}));
  const ValueId huge = must(graph.add(OpKind::kConcat, {x, x, x, x}, Attributes{{"axis", int64_t{0}}}));
  const ValueId small = must(
      graph.add(OpKind::kSlice, {huge}, Attributes{{"axis", int64_t{0}}, {"start", int64_t{0}}, {"end", int64_t{1}}}));
  ASSERT_TRUE(graph.add_output("small", small).ok());
  auto plan = plan_memory(graph);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(plan.status().message().find("value 1 (i64[2305843009213693952]): byte size overflows"), std::string::npos)
      << plan.status().message();
}

TEST(MemoryPlannerTest, ReportsAnArenaTooLargeToAddress) {
  Graph graph(std::make_shared<ConstantTable>());
  // Each concat is 3 * 2^61 bytes; three of them live at once exceed 2^64.
  const ValueId x = must(graph.add_input("x", DType::kI64, {int64_t{1} << 58}));
  const Attributes axis0{{"axis", int64_t{0}}};
  const Attributes first_row{{"axis", int64_t{0}}, {"start", int64_t{0}}, {"end", int64_t{1}}};
  std::vector<ValueId> big;
  for (int i = 0; i < 3; ++i) {
    big.push_back(must(graph.add(OpKind::kConcat, {x, x, x}, axis0)));
  }
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(graph.add_output("row" + std::to_string(i), must(graph.add(OpKind::kSlice, {big[i]}, first_row))).ok());
  }
  ASSERT_TRUE(verify_graph(graph).ok()) << verify_graph(graph).to_string();
  auto plan = plan_memory(graph);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(plan.status().message().find("the arena overflows 64 bits"), std::string::npos) << plan.status().message();
}

// ---------------------------------------------------------------------------------------------
// Property test: random graphs, planned, checked against lifetimes computed here.

class RandomGraphBuilder {
 public:
  explicit RandomGraphBuilder(uint32_t seed) : rng_(seed), graph_(std::make_shared<ConstantTable>()) {}

  Graph build() {
    const int num_inputs = 1 + uniform(0, 2);
    for (int i = 0; i < num_inputs; ++i) {
      pool_.push_back(must(graph_.add_input("x" + std::to_string(i), DType::kF32, random_shape())));
    }
    const int num_caches = uniform(0, 2);
    if (num_caches > 0) {
      const int64_t seq = uniform(1, 2);
      rows_ = must(graph_.add_input("rows", DType::kF32, {1, seq, 2, 4}));
      positions_ = must(graph_.add_input("positions", DType::kI32, {seq}));
    }
    for (int i = 0; i < num_caches; ++i) {
      ValueId cache = must(graph_.add_input("cache" + std::to_string(i), DType::kF32, {1, 2, 8, 4}));
      if (chance(50)) {
        cache = must(graph_.add(OpKind::kSilu, {cache}));  // an in-place chain rooted in the arena
      }
      caches_.push_back(cache);
    }
    const int num_nodes = uniform(3, 30);
    for (int i = 0; i < num_nodes; ++i) {
      add_random_node();
    }
    mark_outputs();
    return std::move(graph_);
  }

 private:
  int uniform(int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng_); }
  bool chance(int percent) { return uniform(0, 99) < percent; }
  ValueId pick(const std::vector<ValueId>& values) {
    return values[static_cast<size_t>(uniform(0, static_cast<int>(values.size()) - 1))];
  }
  Shape random_shape() {
    static constexpr int64_t kDims[] = {1, 2, 3, 4, 8, 16};
    Shape shape(static_cast<size_t>(uniform(1, 3)));
    for (int64_t& dim : shape) {
      dim = kDims[uniform(0, 5)];
    }
    return shape;
  }
  const Shape& shape_of(ValueId value) const { return graph_.value(value).shape; }

  // Values of the pool that `fits` accepts, falling back to `value` itself (a multi-use).
  template <typename Fits>
  ValueId pick_partner(ValueId value, Fits fits) {
    std::vector<ValueId> candidates;
    for (ValueId other : pool_) {
      if (fits(shape_of(other))) {
        candidates.push_back(other);
      }
    }
    return candidates.empty() ? value : pick(candidates);
  }

  void add_random_node() {
    const ValueId value = pick(pool_);
    const Shape& shape = shape_of(value);
    switch (uniform(0, 9)) {
      case 0: pool_.push_back(must(graph_.add(OpKind::kSilu, {value}))); break;
      case 1: pool_.push_back(must(graph_.add(OpKind::kGelu, {value}))); break;
      case 2:
      case 3: {
        // Same shape, or the trailing dimensions only (a broadcast).
        const Shape trailing(shape.begin() + 1, shape.end());
        const ValueId other =
            pick_partner(value, [&](const Shape& s) { return s == shape || (!trailing.empty() && s == trailing); });
        pool_.push_back(must(graph_.add(chance(50) ? OpKind::kAdd : OpKind::kMul, {value, other})));
        break;
      }
      case 4: {
        const int64_t elements = num_elements(shape);
        const int64_t lead = elements % 2 == 0 && chance(50) ? 2 : 1;
        pool_.push_back(
            must(graph_.add(OpKind::kReshape, {value}, Attributes{{"shape", std::vector<int64_t>{lead, -1}}})));
        break;
      }
      case 5: {
        const ValueId other = pick_partner(value, [&](const Shape& s) {
          return s.size() == shape.size() && std::equal(s.begin() + 1, s.end(), shape.begin() + 1);
        });
        pool_.push_back(must(graph_.add(OpKind::kConcat, {value, other}, Attributes{{"axis", int64_t{0}}})));
        break;
      }
      case 6: {
        const int axis = uniform(0, static_cast<int>(shape.size()) - 1);
        const int dim = static_cast<int>(shape[static_cast<size_t>(axis)]);
        const int start = uniform(0, dim);
        const int end = uniform(start, dim);
        pool_.push_back(must(graph_.add(OpKind::kSlice, {value},
                                        Attributes{{"axis", int64_t{axis}},
                                                   {"start", int64_t{start}},
                                                   {"end", int64_t{end}},
                                                   {"step", int64_t{uniform(1, 2)}}})));
        break;
      }
      case 7:
      case 8:
        if (!caches_.empty()) {
          ValueId& cache = caches_[static_cast<size_t>(uniform(0, static_cast<int>(caches_.size()) - 1))];
          cache = must(graph_.add(OpKind::kKvCacheUpdate, {cache, rows_, positions_}));
        }
        break;
      default:
        if (!caches_.empty()) {
          // Reads the newest cache value; later updates come after this read.
          const ValueId cache = pick(caches_);
          pool_.push_back(must(graph_.add(OpKind::kReshape, {cache}, Attributes{{"shape", std::vector<int64_t>{-1}}})));
        }
        break;
    }
  }

  void mark_outputs() {
    std::vector<ValueId> node_outputs;
    for (ValueId value : pool_) {
      if (graph_.value(value).kind == ValueKind::kNodeOutput) {
        node_outputs.push_back(value);
      }
    }
    int count = 0;
    for (ValueId value : node_outputs) {
      if (chance(25)) {
        EXPECT_TRUE(graph_.add_output("out" + std::to_string(count++), value).ok());
      }
    }
    if (count == 0 && !node_outputs.empty()) {
      EXPECT_TRUE(graph_.add_output("out", node_outputs.back()).ok());
    }
    for (size_t i = 0; i < caches_.size(); ++i) {
      if (graph_.value(caches_[i]).kind == ValueKind::kNodeOutput && chance(50)) {
        EXPECT_TRUE(graph_.add_output("cache_out" + std::to_string(i), caches_[i]).ok());
      }
    }
  }

  std::mt19937 rng_;
  Graph graph_;
  std::vector<ValueId> pool_;    // f32 values any node may read
  std::vector<ValueId> caches_;  // the newest value of each cache chain
  ValueId rows_ = kNoValue;
  ValueId positions_ = kNoValue;
};

// What the plan must satisfy, derived from the graph alone.
struct ExpectedStorage {
  std::vector<bool> in_arena;
  std::vector<ValueId> root;
  std::vector<int32_t> first;
  std::vector<int32_t> last;
  std::vector<ValueId> view_of;  // a reshape's output in its input's bytes: the value that owns them

  ValueId storage(size_t v) const { return view_of[v] != kNoValue ? view_of[v] : static_cast<ValueId>(v); }
};

ExpectedStorage expected_storage(const Graph& graph) {
  const size_t count = graph.num_values();
  ExpectedStorage expected{std::vector<bool>(count, false), std::vector<ValueId>(count),
                           std::vector<int32_t>(count, -1), std::vector<int32_t>(count, -1),
                           std::vector<ValueId>(count, kNoValue)};
  for (size_t v = 0; v < count; ++v) {
    expected.root[v] = static_cast<ValueId>(v);
  }
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const GraphNode& node = graph.nodes()[i];
    const auto index = static_cast<int32_t>(i);
    for (ValueId output : node.outputs) {
      expected.first[static_cast<size_t>(output)] = index;
      expected.last[static_cast<size_t>(output)] = index;
    }
    if (node.op == OpKind::kKvCacheUpdate) {  // built with the default in_place = 1
      expected.root[static_cast<size_t>(node.outputs[0])] = expected.root[static_cast<size_t>(node.inputs[0])];
    }
  }
  // Every read of a chain member keeps the chain's root alive.
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    for (ValueId input : graph.nodes()[i].inputs) {
      const auto root = static_cast<size_t>(expected.root[static_cast<size_t>(input)]);
      expected.last[root] = std::max(expected.last[root], static_cast<int32_t>(i));
    }
  }
  std::vector<bool> output_chain(count, false);
  for (const GraphOutput& output : graph.outputs()) {
    output_chain[static_cast<size_t>(expected.root[static_cast<size_t>(output.value)])] = true;
  }
  std::vector<int> members(count, 0);
  for (size_t v = 0; v < count; ++v) {
    expected.in_arena[v] = graph.value(static_cast<ValueId>(v)).kind == ValueKind::kNodeOutput &&
                           expected.root[v] == static_cast<ValueId>(v) && !output_chain[v];
    ++members[static_cast<size_t>(expected.root[v])];
  }
  // A reshape that is the last reader of an arena value outside any chain writes into its bytes,
  // which then live as long as the reshape's output (when that is such a value too).
  auto plain = [&](size_t v) { return expected.in_arena[v] && members[v] == 1; };
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const GraphNode& node = graph.nodes()[i];
    if (node.op != OpKind::kReshape) {
      continue;
    }
    const auto in = static_cast<size_t>(node.inputs[0]);
    const auto out = static_cast<size_t>(node.outputs[0]);
    if (plain(in) && plain(out) && expected.last[in] == static_cast<int32_t>(i)) {
      const auto base = static_cast<size_t>(expected.storage(in));
      expected.view_of[out] = static_cast<ValueId>(base);
      expected.last[base] = std::max(expected.last[base], expected.last[out]);
    }
  }
  return expected;
}

TEST(MemoryPlannerPropertyTest, RandomGraphsNeverShareLiveBytes) {
  static constexpr uint32_t kAlignments[] = {1, 16, 64, 256};
  int graphs_with_reuse = 0;
  int graphs_with_arena_chain = 0;
  int graphs_with_view = 0;
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Graph graph = RandomGraphBuilder(seed).build();
    Status verified = verify_graph(graph);
    ASSERT_TRUE(verified.ok()) << verified.to_string();
    const uint32_t alignment = kAlignments[seed % 4];
    auto plan = plan_memory(graph, alignment);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    ASSERT_EQ(plan->values.size(), graph.num_values());

    const ExpectedStorage expected = expected_storage(graph);
    uint64_t aligned_sum = 0;
    std::vector<ValueId> arena;
    for (size_t v = 0; v < graph.num_values(); ++v) {
      const PlannedValue& value = plan->values[v];
      const GraphValue& graph_value = graph.value(static_cast<ValueId>(v));
      auto bytes = tensor_bytes(graph_value.dtype, graph_value.shape);
      ASSERT_TRUE(bytes.ok());
      EXPECT_EQ(value.size, *bytes) << "value " << v;
      ASSERT_EQ(value.in_arena, expected.in_arena[v]) << "value " << v;
      if (expected.root[v] != static_cast<ValueId>(v)) {
        EXPECT_EQ(value.alias_root, expected.root[v]) << "value " << v;
      }
      EXPECT_EQ(value.view_of, expected.view_of[v]) << "value " << v;
      if (!value.in_arena) {
        continue;
      }
      if (value.view_of != kNoValue) {
        // Its bytes are its input's, whose lifetime (checked below) spans its own.
        EXPECT_EQ(value.offset, plan->values[static_cast<size_t>(value.view_of)].offset) << "value " << v;
        continue;
      }
      EXPECT_EQ(value.first_step, expected.first[v]) << "value " << v;
      EXPECT_EQ(value.last_step, expected.last[v]) << "value " << v;
      EXPECT_EQ(value.offset % alignment, 0u) << "value " << v;
      EXPECT_LE(value.offset + value.size, plan->arena_size) << "value " << v;
      aligned_sum += (value.size + alignment - 1) / alignment * alignment;
      arena.push_back(static_cast<ValueId>(v));
      for (ValueId other : arena) {
        if (other == static_cast<ValueId>(v)) {
          continue;
        }
        const auto o = static_cast<size_t>(other);
        const bool live_together = expected.first[v] <= expected.last[o] && expected.first[o] <= expected.last[v];
        if (live_together) {
          EXPECT_FALSE(bytes_overlap(value, plan->values[o]))
              << "values " << v << " and " << other << " are live together and share bytes";
        }
      }
    }
    for (size_t v = 0; v < graph.num_values(); ++v) {
      if (expected.root[v] != static_cast<ValueId>(v) && expected.in_arena[static_cast<size_t>(expected.root[v])]) {
        ++graphs_with_arena_chain;
        break;
      }
    }
    if (std::any_of(expected.view_of.begin(), expected.view_of.end(), [](ValueId v) { return v != kNoValue; })) {
      ++graphs_with_view;
    }
    EXPECT_LE(plan->arena_size, aligned_sum);
    if (plan->arena_size < aligned_sum) {
      ++graphs_with_reuse;
    }
  }
  // The generator must exercise what the planner is for.
  EXPECT_GT(graphs_with_reuse, 50);
  EXPECT_GT(graphs_with_arena_chain, 10);
  EXPECT_GT(graphs_with_view, 10);
}

}  // namespace
}  // namespace staticlm

namespace staticlm {
namespace {

// x -> a = silu(x) -> b = silu(a) -> c = silu(b) -> d = silu(c) -> out; nodes 1 and 2 run as one
// delegate call reading a and writing c.
TEST(MemoryPlannerScheduleTest, ADelegateStepOwnsItsPrivateValuesAndTouchesItsBoundary) {
  Graph graph(std::make_shared<ConstantTable>());
  const ValueId x = *graph.add_input("x", DType::kF32, {16});
  const ValueId a = *graph.add(OpKind::kSilu, {x});
  const ValueId b = *graph.add(OpKind::kSilu, {a});
  const ValueId c = *graph.add(OpKind::kSilu, {b});
  const ValueId d = *graph.add(OpKind::kSilu, {c});
  ASSERT_TRUE(graph.add_output("out", d).ok());
  std::vector<ScheduleStep> steps(3);
  steps[0].node = 0;
  steps[1].inputs = {a};
  steps[1].outputs = {c};
  steps[2].node = 3;
  auto plan = plan_memory(graph, steps, 64);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  const PlannedValue& private_value = plan->values[static_cast<size_t>(b)];
  EXPECT_FALSE(private_value.in_arena) << "only the delegate uses b";
  EXPECT_EQ(private_value.first_step, -1);
  const PlannedValue& pa = plan->values[static_cast<size_t>(a)];
  const PlannedValue& pc = plan->values[static_cast<size_t>(c)];
  EXPECT_TRUE(pa.in_arena);
  EXPECT_TRUE(pc.in_arena);
  EXPECT_EQ(pa.first_step, 0);
  EXPECT_EQ(pa.last_step, 1);
  EXPECT_EQ(pc.first_step, 1);
  EXPECT_EQ(pc.last_step, 2);
  // The delegate may touch a and c at any time during its call: they never share bytes.
  EXPECT_NE(pa.offset, pc.offset);
  EXPECT_EQ(plan->arena_size, 128u);
  // One step per node is the plain schedule: a and c may share, being never live together.
  auto plain = plan_memory(graph, 64);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->values[static_cast<size_t>(a)].offset, plain->values[static_cast<size_t>(c)].offset);
}

TEST(MemoryPlannerScheduleTest, RefusesStepsThatNameNothing) {
  Graph graph(std::make_shared<ConstantTable>());
  const ValueId x = *graph.add_input("x", DType::kF32, {16});
  ASSERT_TRUE(graph.add_output("out", *graph.add(OpKind::kSilu, {x})).ok());
  std::vector<ScheduleStep> steps(1);
  steps[0].node = 5;
  EXPECT_NE(plan_memory(graph, steps).status().message().find("step 0 runs node 5, which does not exist"),
            std::string::npos);
  steps[0].node = -1;
  steps[0].inputs = {42};
  EXPECT_NE(plan_memory(graph, steps).status().message().find("step 0 touches value 42, which does not exist"),
            std::string::npos);
}

}  // namespace
}  // namespace staticlm
