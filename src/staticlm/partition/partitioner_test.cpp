// SPDX-License-Identifier: Apache-2.0
// The partitioner with a test backend: options routed through the schema, the backend's passes
// running before tagging, skip sets, no-fallback, the lowered delegate calls and the placement
// report. Execution of partitioned programs is covered by tests/backend_conformance_test.cpp.
#include "staticlm/partition/partitioner.h"

#include <cstring>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "staticlm/partition/partition_formation.h"

namespace staticlm {
namespace {

class RenameGeluToSilu final : public GraphPass {
 public:
  std::string_view name() const override { return "rename_gelu_to_silu"; }
  Status run(Graph& graph) override {
    for (GraphNode& node : graph.mutable_nodes()) {
      if (node.op == OpKind::kGelu) {
        node.op = OpKind::kSilu;
        node.attributes = {};
      }
    }
    return ok_status();
  }
};

// Takes the ops in `ops`; its blob lists the partition's ops; optionally reverses its outputs.
class TestBackend final : public Backend {
 public:
  TestBackend(std::set<OpKind> ops, bool contributes_pass) : ops_(std::move(ops)), pass_(contributes_pass) {
    schema_.backend_id = "test";
    schema_.options = partitioner_option_specs();
    OptionSpec reverse;
    reverse.name = "reverse_outputs";
    reverse.type = OptionType::kBool;
    reverse.default_value = false;
    reverse.route = "test";
    schema_.options.push_back(reverse);
  }
  std::string_view id() const override { return "test"; }
  std::string_view summary() const override { return "test backend"; }
  const OptionSchema& option_schema() const override { return schema_; }
  std::vector<std::unique_ptr<GraphPass>> passes(const ResolvedOptions&) const override {
    std::vector<std::unique_ptr<GraphPass>> out;
    if (pass_) out.push_back(std::make_unique<RenameGeluToSilu>());
    return out;
  }
  NodeSupport supports(const Graph& graph, size_t node, const ResolvedOptions&) const override {
    const OpKind op = graph.nodes()[node].op;
    return ops_.count(op) != 0 ? NodeSupport::yes()
                               : NodeSupport::no(str_cat("op '", op_name(op), "' is not in its set"));
  }
  Result<DelegatePayload> preprocess(const PartitionSubgraph& partition,
                                     const ResolvedOptions& options) const override {
    DelegatePayload payload;
    std::string ops;
    for (const GraphNode& node : partition.graph->nodes()) ops += str_cat(op_name(node.op), " ");
    payload.blob = make_owned_source(std::vector<uint8_t>(ops.begin(), ops.end()));
    payload.compile_specs.push_back({"ops", std::vector<uint8_t>(ops.begin(), ops.end())});
    for (size_t v = 0; v < partition.graph->num_values(); ++v) {
      const GraphValue& value = partition.graph->value(static_cast<ValueId>(v));
      if (value.kind == ValueKind::kConstant) payload.runtime_constants.push_back(value.constant);
    }
    if (*options.get_bool("reverse_outputs")) {
      for (size_t i = partition.graph->outputs().size(); i > 0; --i)
        payload.output_order.push_back(static_cast<uint32_t>(i - 1));
    }
    return payload;
  }

 private:
  std::set<OpKind> ops_;
  bool pass_;
  OptionSchema schema_;
};

std::shared_ptr<ByteSource> zeros(size_t floats) {
  return make_owned_source(std::vector<uint8_t>(floats * 4, 0));
}

// forward(x): a = linear(x, w); b = gelu(a); c = mul(b, x); d = silu(c); e = add(d, a) -> "out"
// (also "c" as a second output). Node indices 0..4 in that order.
std::unique_ptr<Graph> chain_graph() {
  auto constants = std::make_shared<ConstantTable>();
  ConstantId w_id = *constants->add("w", DType::kF32, {4, 4}, zeros(16));
  auto graph = std::make_unique<Graph>(constants);
  Graph& g = *graph;
  ValueId x = *g.add_input("x", DType::kF32, {2, 4});
  ValueId w = *g.use_constant(w_id);
  ValueId a = *g.add(OpKind::kLinear, {x, w});
  ValueId b = *g.add(OpKind::kGelu, {a}, {}, "act");
  ValueId c = *g.add(OpKind::kMul, {b, x});
  ValueId d = *g.add(OpKind::kSilu, {c});
  ValueId e = *g.add(OpKind::kAdd, {d, a});
  EXPECT_TRUE(g.add_output("out", e).ok());
  EXPECT_TRUE(g.add_output("c", c).ok());
  return graph;
}

const std::set<OpKind> kChainOpsButGelu = {OpKind::kLinear, OpKind::kMul, OpKind::kSilu, OpKind::kAdd};

OptionMap texts(std::initializer_list<std::pair<std::string, std::string>> entries) {
  OptionMap map;
  for (const auto& [key, value] : entries) map.emplace(key, RawOptionValue::text(value));
  return map;
}

Result<PartitionedProgram> partition(const Backend& backend, Graph& graph, const OptionMap& options = {},
                                     PartitionRunOptions run = {}) {
  STATICLM_ASSIGN_OR_RETURN(Partitioner partitioner, Partitioner::from_options(backend, options));
  const std::vector<PartitionMethod> methods = {{"forward", &graph}};
  return partitioner.run(methods, LowerOptions{}, run);
}

void expect_contains(const std::string& text, std::string_view expected) {
  EXPECT_NE(text.find(expected), std::string::npos) << text;
}

TEST(PartitionerTest, BackendPassesRunBeforeTagging) {
  // Without its pass the backend cannot take gelu, which splits the chain in two partitions.
  TestBackend without_pass(kChainOpsButGelu, false);
  auto graph = chain_graph();
  auto split = partition(without_pass, *graph);
  ASSERT_TRUE(split.ok()) << split.status().to_string();
  const MethodPlacement& split_placement = split->report.methods[0];
  EXPECT_EQ(split_placement.delegated_nodes(), 4u);
  EXPECT_EQ(split_placement.nodes[1].delegate, -1);
  expect_contains(split_placement.nodes[1].reason, "test does not take it: op 'gelu' is not in its set");
  EXPECT_EQ(split->spec.delegates.size(), 2u);
  ASSERT_EQ(split->spec.methods[0].instructions.size(), 3u);
  EXPECT_EQ(std::get<KernelCallSpec>(split->spec.methods[0].instructions[1]).op, "gelu");

  // With it, the pass has renamed gelu to silu before tagging, so one partition takes all.
  TestBackend with_pass(kChainOpsButGelu, true);
  auto whole_graph = chain_graph();
  auto whole = partition(with_pass, *whole_graph);
  ASSERT_TRUE(whole.ok()) << whole.status().to_string();
  EXPECT_EQ(whole->report.delegated_nodes(), 5u);
  EXPECT_EQ(whole->report.methods[0].nodes[1].op, "silu");
  EXPECT_EQ(whole->spec.delegates.size(), 1u);
  ASSERT_EQ(whole->spec.methods[0].instructions.size(), 1u);
  const std::vector<uint8_t>& ops = whole->spec.delegates[0].compile_specs[0].value;
  EXPECT_EQ(std::string(ops.begin(), ops.end()), "linear silu mul silu add ");
}

TEST(PartitionerTest, DelegateCallReadsBoundaryValuesAndRuntimeConstants) {
  TestBackend backend({OpKind::kGelu, OpKind::kMul, OpKind::kSilu, OpKind::kAdd}, false);
  auto graph = chain_graph();
  auto result = partition(backend, *graph, texts({{"reverse_outputs", "true"}}));
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  const MethodSpec& method = result->spec.methods[0];
  ASSERT_EQ(method.instructions.size(), 2u);
  EXPECT_EQ(std::get<KernelCallSpec>(method.instructions[0]).op, "linear");
  const auto& call = std::get<DelegateCallSpec>(method.instructions[1]);
  // Inputs: a (from the linear) and x, in first-use order; no constant (w is read outside).
  ASSERT_EQ(call.inputs.size(), 2u);
  EXPECT_EQ(method.values[call.inputs[0]].storage, ValueStorage::kArena);
  EXPECT_EQ(method.values[call.inputs[1]].storage, ValueStorage::kInput);
  // Outputs: c then e in production order, both program outputs; the backend reversed its own.
  ASSERT_EQ(call.outputs.size(), 2u);
  EXPECT_EQ(method.values[call.outputs[0]].storage, ValueStorage::kOutput);
  EXPECT_EQ(method.values[call.outputs[0]].index, 1u);  // "c"
  EXPECT_EQ(method.values[call.outputs[1]].index, 0u);  // "out"
  EXPECT_EQ(result->spec.delegates[0].output_order, (std::vector<uint32_t>{1, 0}));
  // The delegate carries the effective settings; the program the placement report.
  const DelegateSpec& delegate = result->spec.delegates[0];
  EXPECT_EQ(delegate.backend_id, "test");
  ASSERT_EQ(delegate.compile_specs.size(), 2u);
  EXPECT_EQ(delegate.compile_specs[1].key, "effective_settings");
  nlohmann::json settings = nlohmann::json::parse(delegate.compile_specs[1].value);
  EXPECT_EQ(settings["backend"], "test");
  bool found = false;
  for (const auto& option : settings["options"]) {
    if (option["name"] == "reverse_outputs") {
      found = true;
      EXPECT_EQ(option["value"], true);
      EXPECT_EQ(option["source"], "given");
    }
  }
  EXPECT_TRUE(found);
  ASSERT_FALSE(result->spec.metadata.empty());
  EXPECT_EQ(result->spec.metadata.back().key, "placement");
  nlohmann::json placement = nlohmann::json::parse(std::get<std::string>(result->spec.metadata.back().value));
  EXPECT_EQ(placement["methods"][0]["nodes"][0]["on"], "portable");
  EXPECT_EQ(placement["methods"][0]["nodes"][1]["on"], "test");
  EXPECT_EQ(placement["methods"][0]["nodes"][1]["name"], "act");
}

TEST(PartitionerTest, RuntimeConstantsAreAppendedToTheCallInputs) {
  TestBackend backend({OpKind::kLinear, OpKind::kGelu, OpKind::kMul, OpKind::kSilu, OpKind::kAdd}, false);
  auto graph = chain_graph();
  auto result = partition(backend, *graph);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  const MethodSpec& method = result->spec.methods[0];
  const auto& call = std::get<DelegateCallSpec>(method.instructions[0]);
  ASSERT_EQ(call.inputs.size(), 2u);
  EXPECT_EQ(method.values[call.inputs[0]].storage, ValueStorage::kInput);
  EXPECT_EQ(method.values[call.inputs[1]].storage, ValueStorage::kConstant);
  ASSERT_EQ(result->spec.constants.size(), 1u);
  // Nothing but the boundary: inputs, constant, two outputs.
  EXPECT_EQ(method.values.size(), 4u);
  EXPECT_EQ(method.arena_size, 0u);
}

TEST(PartitionerTest, SkipSetsKeepNodesOnThePortableKernels) {
  TestBackend backend({OpKind::kLinear, OpKind::kGelu, OpKind::kMul, OpKind::kSilu, OpKind::kAdd}, false);
  auto graph = chain_graph();
  auto result =
      partition(backend, *graph, texts({{"skip_node_op_set", "silu"}, {"skip_node_id_set", "forward:2,act"}}));
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  const auto& nodes = result->report.methods[0].nodes;
  EXPECT_GE(nodes[0].delegate, 0);
  EXPECT_EQ(nodes[1].reason, "skip_node_id_set has 'act'");
  EXPECT_EQ(nodes[2].reason, "skip_node_id_set has 'forward:2'");
  EXPECT_EQ(nodes[3].reason, "skip_node_op_set has 'silu'");
  EXPECT_GE(nodes[4].delegate, 0);
  for (const InstructionSpec& instruction : result->spec.methods[0].instructions) {
    if (const auto* call = std::get_if<KernelCallSpec>(&instruction)) {
      EXPECT_TRUE(call->op == "gelu" || call->op == "mul" || call->op == "silu") << call->op;
    }
  }
}

TEST(PartitionerTest, RefusesSkipEntriesThatMatchNothing) {
  TestBackend backend(kChainOpsButGelu, false);
  for (const auto& [ids, expected] : std::vector<std::pair<std::string, std::string>>{
           {"forward:99", "'forward:99' matches no node"},
           {"nonode", "'nonode' matches no node"},
           {"prefill:1", "'prefill:1' is not METHOD:INDEX with a method of this program"}}) {
    auto graph = chain_graph();
    auto result = partition(backend, *graph, texts({{"skip_node_id_set", ids}}));
    ASSERT_FALSE(result.ok()) << ids;
    expect_contains(result.status().message(), expected);
  }
  auto graph = chain_graph();
  auto unknown_op = partition(backend, *graph, texts({{"skip_node_op_set", "sliu"}}));
  ASSERT_FALSE(unknown_op.ok());
  expect_contains(unknown_op.status().message(), "option 'skip_node_op_set': unknown op 'sliu' (did you mean 'silu'?)");
}

TEST(PartitionerTest, FromOptionsRoutesThroughTheSchema) {
  TestBackend backend(kChainOpsButGelu, false);
  auto unknown = Partitioner::from_options(backend, texts({{"revrese_outputs", "true"}}));
  ASSERT_FALSE(unknown.ok());
  expect_contains(unknown.status().message(),
                  "unknown option 'revrese_outputs' for backend 'test' (did you mean 'reverse_outputs'?)");
  auto resolved = Partitioner::from_options(backend, texts({{"skip_mutable_buffer", "true"}}));
  ASSERT_TRUE(resolved.ok());
  EXPECT_TRUE(resolved->settings().skip_mutable_buffer);
  EXPECT_TRUE(resolved->options().find("skip_mutable_buffer")->given);
  EXPECT_EQ(resolved->options().find("skip_mutable_buffer")->route, "partitioner");
}

TEST(PartitionerTest, NoFallbackNamesTheNodesLeftOut) {
  TestBackend backend(kChainOpsButGelu, false);
  auto graph = chain_graph();
  PartitionRunOptions run;
  run.no_fallback = true;
  auto result = partition(backend, *graph, {}, run);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kFailedPrecondition);
  expect_contains(
      result.status().message(),
      "1 node stays on the portable kernels: method 'forward' node 1 (op 'gelu', name 'act'): test does not "
      "take it");
  TestBackend everything({OpKind::kLinear, OpKind::kGelu, OpKind::kMul, OpKind::kSilu, OpKind::kAdd}, false);
  auto full_graph = chain_graph();
  EXPECT_TRUE(partition(everything, *full_graph, {}, run).ok());
}

// cache' = kv_cache_update(cache, rows, positions) in place, with `peek` = slice(cache) read
// before the update and attention over the updated cache.
std::unique_ptr<Graph> in_place_graph() {
  auto graph = std::make_unique<Graph>(std::make_shared<ConstantTable>());
  Graph& g = *graph;
  ValueId cache = *g.add_input("cache", DType::kF32, {1, 1, 4, 2});
  ValueId rows = *g.add_input("rows", DType::kF32, {1, 1, 1, 2});
  ValueId positions = *g.add_input("positions", DType::kI32, {1});
  ValueId q = *g.add_input("q", DType::kF32, {1, 1, 1, 2});
  ValueId peek = *g.add(OpKind::kSlice, {cache}, {{"axis", int64_t{2}}, {"start", int64_t{0}}, {"end", int64_t{1}}});
  ValueId updated = *g.add(OpKind::kKvCacheUpdate, {cache, rows, positions});
  ValueId attended = *g.add(OpKind::kAttention, {q, updated, updated, positions});
  ValueId sum = *g.add(OpKind::kAdd, {attended, peek});
  EXPECT_TRUE(g.add_output("out", sum).ok());
  return graph;
}

TEST(PartitionerTest, ReadersOfAnOverwrittenValueRunBeforeTheUpdate) {
  auto graph = in_place_graph();
  const NodeDependencies dependencies = node_dependencies(*graph);
  // Node 0 (slice) reads the cache node 1 overwrites: a write-after-read edge 0 -> 1.
  EXPECT_EQ(dependencies.successors[0], (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(dependencies.successors[1], (std::vector<int32_t>{2}));

  // With the slice left out, the update and everything after it cannot all be one partition
  // that runs before the slice, and the input is still marked mutable.
  TestBackend backend({OpKind::kKvCacheUpdate, OpKind::kAttention, OpKind::kAdd}, false);
  auto result = partition(backend, *graph);
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  const MethodSpec& method = result->spec.methods[0];
  ASSERT_GE(method.instructions.size(), 2u);
  EXPECT_EQ(std::get<KernelCallSpec>(method.instructions[0]).op, "slice");
  EXPECT_TRUE(method.inputs[0].is_mutable);
  // The delegate updates the cache through its input; the cache is not one of its outputs.
  const auto& call = std::get<DelegateCallSpec>(method.instructions[1]);
  for (uint32_t output : call.outputs) {
    EXPECT_NE(method.values[output].storage, ValueStorage::kInput);
  }

  auto skipped_graph = in_place_graph();
  auto skipped = partition(backend, *skipped_graph, texts({{"skip_mutable_buffer", "true"}}));
  ASSERT_TRUE(skipped.ok()) << skipped.status().to_string();
  EXPECT_EQ(skipped->report.methods[0].nodes[1].reason, "skip_mutable_buffer: it updates a buffer in place");
}

}  // namespace
}  // namespace staticlm
