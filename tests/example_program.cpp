// SPDX-License-Identifier: Apache-2.0
#include "example_program.h"

#include <cstring>
#include <random>

#include "staticlm/format/program_writer.h"
#include "staticlm/lowering/lower_program.h"
#include "staticlm/ops/rope.h"

namespace staticlm::testing {
namespace {

std::vector<float> random_vector(std::mt19937& rng, size_t count, float scale, float offset = 0.0f) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(count);
  for (float& v : values) {
    v = offset + scale * normal(rng);
  }
  return values;
}

std::shared_ptr<ByteSource> float_source(const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return make_owned_source(std::move(bytes));
}

}  // namespace

ExampleWeights ExampleWeights::random(uint32_t seed) {
  std::mt19937 rng(seed);
  ExampleWeights w;
  w.table = random_vector(rng, kVocab * kHidden, 0.5f);
  w.norm = random_vector(rng, kHidden, 0.1f, 1.0f);
  w.w_key = random_vector(rng, kHidden * kHidden, 0.35f);
  w.w_query = random_vector(rng, kHidden * kHidden, 0.35f);
  return w;
}

Result<std::unique_ptr<Graph>> build_example_graph(const ExampleWeights& w) {
  using W = ExampleWeights;
  auto constants = std::make_shared<ConstantTable>();
  STATICLM_ASSIGN_OR_RETURN(ConstantId table_id, constants->add("model.embed_tokens.weight", DType::kF32,
                                                                {W::kVocab, W::kHidden}, float_source(w.table)));
  STATICLM_ASSIGN_OR_RETURN(ConstantId norm_id,
                            constants->add("model.norm.weight", DType::kF32, {W::kHidden}, float_source(w.norm)));
  STATICLM_ASSIGN_OR_RETURN(
      ConstantId key_id, constants->add("k_proj.weight", DType::kF32, {W::kHidden, W::kHidden}, float_source(w.w_key)));
  STATICLM_ASSIGN_OR_RETURN(ConstantId query_id, constants->add("q_proj.weight", DType::kF32, {W::kHidden, W::kHidden},
                                                                float_source(w.w_query)));

  auto graph = std::make_unique<Graph>(constants);
  Graph& g = *graph;
  STATICLM_ASSIGN_OR_RETURN(ValueId ids, g.add_input("tokens", DType::kI32, {1, W::kSeq}));
  STATICLM_ASSIGN_OR_RETURN(ValueId positions, g.add_input("positions", DType::kI32, {W::kSeq}));
  STATICLM_ASSIGN_OR_RETURN(ValueId cache,
                            g.add_input("cache", DType::kF32, {1, W::kKvHeads, W::kCacheLen, W::kHeadDim}));
  STATICLM_ASSIGN_OR_RETURN(ValueId table, g.use_constant(table_id));
  STATICLM_ASSIGN_OR_RETURN(ValueId norm, g.use_constant(norm_id));
  STATICLM_ASSIGN_OR_RETURN(ValueId w_key, g.use_constant(key_id));
  STATICLM_ASSIGN_OR_RETURN(ValueId w_query, g.use_constant(query_id));

  const Shape heads_shape = {1, W::kSeq, W::kKvHeads, W::kHeadDim};
  STATICLM_ASSIGN_OR_RETURN(ValueId x, g.add(OpKind::kEmbedding, {table, ids}));
  STATICLM_ASSIGN_OR_RETURN(ValueId h, g.add(OpKind::kRmsNorm, {x, norm}, {{"eps", 1e-5}}));
  STATICLM_ASSIGN_OR_RETURN(ValueId k, g.add(OpKind::kLinear, {h, w_key}));
  STATICLM_ASSIGN_OR_RETURN(ValueId k_heads, g.add(OpKind::kReshape, {k}, {{"shape", heads_shape}}));
  STATICLM_ASSIGN_OR_RETURN(ValueId updated, g.add(OpKind::kKvCacheUpdate, {cache, k_heads, positions}));
  STATICLM_ASSIGN_OR_RETURN(ValueId q, g.add(OpKind::kLinear, {h, w_query}));
  STATICLM_ASSIGN_OR_RETURN(ValueId q_heads, g.add(OpKind::kReshape, {q}, {{"shape", heads_shape}}));
  Attributes rope_attrs;
  RopeParams rope;
  rope.theta = 10000.0;
  rope.rotary_dim = W::kHeadDim;
  rope.to_attributes(rope_attrs);
  STATICLM_ASSIGN_OR_RETURN(ValueId q_rot, g.add(OpKind::kRope, {q_heads, positions}, rope_attrs));
  STATICLM_ASSIGN_OR_RETURN(ValueId attended,
                            g.add(OpKind::kAttention, {q_rot, updated, updated, positions}, {{"scale", 0.5}}));
  STATICLM_ASSIGN_OR_RETURN(ValueId merged,
                            g.add(OpKind::kReshape, {attended}, {{"shape", Shape{1, W::kSeq, W::kHidden}}}));
  STATICLM_ASSIGN_OR_RETURN(ValueId residual, g.add(OpKind::kAdd, {x, merged}));
  STATICLM_ASSIGN_OR_RETURN(ValueId logits, g.add(OpKind::kLinear, {residual, table}));
  STATICLM_RETURN_IF_ERROR(g.add_output("logits", logits));
  return graph;
}

Status write_example_program(const ExampleWeights& weights, const std::string& path) {
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, build_example_graph(weights));
  std::vector<MethodGraph> methods = {{"forward", graph.get()}};
  LowerOptions options;
  options.metadata.push_back({"example", std::string("attention block")});
  options.files.push_back({"notes.txt", make_owned_source({'h', 'i', '\n'})});
  STATICLM_ASSIGN_OR_RETURN(ProgramSpec spec, lower_to_program(methods, options));
  return write_program(spec, path).status();
}

}  // namespace staticlm::testing
