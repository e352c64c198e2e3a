// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/cpu/export/qkv_rope_cache_fusion.h"

#include <array>
#include <optional>
#include <vector>

namespace staticlm {
namespace {

namespace io = qkv_rope_cache;

constexpr int32_t kNoReader = -1;
constexpr int32_t kSeveralReaders = -2;

// The one node that reads each value, kNoReader, or kSeveralReaders (a graph output counts as a
// reader of its own).
std::vector<int32_t> sole_readers(const Graph& graph) {
  std::vector<int32_t> reader(graph.num_values(), kNoReader);
  const std::vector<int> counts = graph.count_readers();
  const std::span<const GraphNode> nodes = graph.nodes();
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (ValueId input : nodes[n].inputs) {
      if (input != kNoValue) {
        reader[static_cast<size_t>(input)] = static_cast<int32_t>(n);
      }
    }
  }
  for (size_t v = 0; v < reader.size(); ++v) {
    if (counts[v] != 1) {
      reader[v] = counts[v] == 0 ? kNoReader : kSeveralReaders;
    }
  }
  return reader;
}

// Where one projection of the multi_linear goes: q ends at its rope, k at its cache update after
// a rope, v at its cache update.
struct Projection {
  enum Role { kQ, kK, kV } role = kQ;
  std::vector<size_t> nodes;  // the reshape, rope and update this projection's chain replaces
  ValueId result = kNoValue;  // the rotated queries, or the updated cache
  ValueId cache = kNoValue;   // k / v: the cache it updates
  ValueId positions = kNoValue;
  const Attributes* rope = nullptr;  // q / k
  int64_t head_dim = 0;
  ValueId norm = kNoValue;  // q / k: the weight of the per-head rms_norm before the rope (Qwen3, Gemma 3)
  double norm_eps = 0.0;
};

class ChainReader {
 public:
  explicit ChainReader(const Graph& graph) : graph_(graph), reader_(sole_readers(graph)) {}

  const GraphNode* sole_reader(ValueId value, OpKind op, int32_t* index) const {
    const int32_t n = reader_[static_cast<size_t>(value)];
    if (n < 0 || graph_.nodes()[static_cast<size_t>(n)].op != op) {
      return nullptr;
    }
    *index = n;
    return &graph_.nodes()[static_cast<size_t>(n)];
  }

  // The chain from one projection output, or nullopt where it is not one the fusion takes.
  std::optional<Projection> follow(ValueId projected) const {
    Projection out;
    int32_t index = 0;
    const GraphNode* reshape = sole_reader(projected, OpKind::kReshape, &index);
    if (reshape == nullptr || reshape->outputs.size() != 1) {
      return std::nullopt;
    }
    out.nodes.push_back(static_cast<size_t>(index));
    const ValueId heads = reshape->outputs[0];
    const Shape& split = graph_.value(heads).shape;
    const Shape& flat = graph_.value(projected).shape;
    if (split.size() != 4 || flat.size() != 3 || split[0] != flat[0] || split[1] != flat[1] ||
        split[2] * split[3] != flat[2]) {
      return std::nullopt;
    }
    out.head_dim = split[3];
    ValueId rows = heads;
    if (const GraphNode* norm = sole_reader(heads, OpKind::kRmsNorm, &index); norm != nullptr) {
      const Result<double> eps = norm->attributes.get_float("eps");
      if (norm->inputs.size() != 2 || norm->inputs[0] != heads || norm->outputs.size() != 1 || !eps.ok() ||
          graph_.value(norm->inputs[1]).shape != Shape{out.head_dim}) {
        return std::nullopt;
      }
      out.nodes.push_back(static_cast<size_t>(index));
      out.norm = norm->inputs[1];
      out.norm_eps = *eps;
      rows = norm->outputs[0];
    }
    if (const GraphNode* rope = sole_reader(rows, OpKind::kRope, &index); rope != nullptr) {
      if (rope->inputs.size() != 2 || rope->inputs[0] != rows || rope->outputs.size() != 1) {
        return std::nullopt;
      }
      out.nodes.push_back(static_cast<size_t>(index));
      out.rope = &rope->attributes;
      out.positions = rope->inputs[1];
      rows = rope->outputs[0];
      out.result = rows;
      out.role = Projection::kQ;
    }
    if (out.norm != kNoValue && out.rope == nullptr) {
      return std::nullopt;  // a norm the fused kernel would not apply (it normalizes q and k only)
    }
    const GraphNode* update = sole_reader(rows, OpKind::kKvCacheUpdate, &index);
    if (update == nullptr) {
      // Rotated queries stay as they are for their readers; anything else is no chain.
      return out.rope != nullptr ? std::optional<Projection>(out) : std::nullopt;
    }
    const bool in_place = !in_place_updates(update->op, update->attributes).empty();
    if (!in_place || update->inputs.size() != 3 || update->inputs[1] != rows || update->outputs.size() != 1 ||
        (out.positions != kNoValue && update->inputs[2] != out.positions)) {
      return std::nullopt;
    }
    out.nodes.push_back(static_cast<size_t>(index));
    out.role = out.rope != nullptr ? Projection::kK : Projection::kV;
    out.cache = update->inputs[0];
    out.positions = update->inputs[2];
    out.result = update->outputs[0];
    return out;
  }

 private:
  const Graph& graph_;
  std::vector<int32_t> reader_;
};

// The fused node for the multi_linear at `position`, or nullopt; `removed` gains the nodes it
// replaces. It takes the multi_linear's place, so the caches and positions must exist there.
std::optional<GraphNode> fuse(const Graph& graph, const ChainReader& chains, size_t position,
                              std::vector<size_t>& removed) {
  const GraphNode& node = graph.nodes()[position];
  if (node.op != OpKind::kMultiLinear || node.outputs.size() != 3) {
    return std::nullopt;
  }
  const Result<MultiLinearSplit> split = multi_linear_split(node.inputs.size(), node.attributes);
  // Weights already laid out (weight_layout, weight_shapes by part) would need their attributes
  // put in role order: the pass runs before pack_weights, where the node has `parts` alone.
  if (!split.ok() || split->parts != 3 || node.attributes.entries().size() != 1) {
    return std::nullopt;
  }
  std::array<std::optional<Projection>, 3> by_role;
  std::array<size_t, 3> part_of_role{};
  for (size_t p = 0; p < 3; ++p) {
    std::optional<Projection> chain = chains.follow(node.outputs[p]);
    if (!chain || by_role[chain->role]) {
      return std::nullopt;
    }
    part_of_role[chain->role] = p;
    by_role[chain->role] = std::move(chain);
  }
  const Projection& q = *by_role[Projection::kQ];
  const Projection& k = *by_role[Projection::kK];
  const Projection& v = *by_role[Projection::kV];
  const int64_t head_dim = q.head_dim;
  if (k.head_dim != head_dim || v.head_dim != head_dim || head_dim % QkvRopeCacheFusion::kHeadDimMultiple != 0 ||
      *q.rope != *k.rope || q.positions != k.positions || k.positions != v.positions || k.cache == v.cache ||
      !graph.defined_before(k.cache, position) || !graph.defined_before(v.cache, position) ||
      !graph.defined_before(q.positions, position)) {
    return std::nullopt;
  }
  const bool normed = q.norm != kNoValue;
  if ((k.norm != kNoValue) != normed ||
      (normed && (q.norm_eps != k.norm_eps || !graph.defined_before(q.norm, position) ||
                  !graph.defined_before(k.norm, position)))) {
    return std::nullopt;
  }
  GraphNode fused;
  fused.op = OpKind::kQkvRopeCache;
  fused.inputs.assign(io::kBiasedInputs, kNoValue);
  fused.inputs[io::kX] = node.inputs[0];
  for (size_t role = 0; role < 3; ++role) {
    fused.inputs[io::kQWeight + role] = node.inputs[1 + part_of_role[role]];
    if (split->biased) {
      fused.inputs[io::kQBias + role] = node.inputs[1 + 3 + part_of_role[role]];
    }
  }
  if (!split->biased) {
    fused.inputs.resize(io::kUnbiasedInputs);
  }
  if (normed) {
    fused.inputs.push_back(q.norm);
    fused.inputs.push_back(k.norm);
  }
  fused.inputs[io::kKeyCache] = k.cache;
  fused.inputs[io::kValueCache] = v.cache;
  fused.inputs[io::kPositions] = q.positions;
  fused.outputs = {q.result, k.result, v.result};
  fused.attributes = *q.rope;
  if (normed) {
    fused.attributes.set("qk_norm_eps", q.norm_eps);
  }
  fused.name = node.name;
  for (const Projection* chain : {&q, &k, &v}) {
    removed.insert(removed.end(), chain->nodes.begin(), chain->nodes.end());
  }
  return fused;
}

}  // namespace

Status QkvRopeCacheFusion::run(Graph& graph) {
  const ChainReader chains(graph);
  const std::span<const GraphNode> nodes = graph.nodes();
  std::vector<GraphNode> rewritten(nodes.begin(), nodes.end());
  std::vector<bool> drop(nodes.size(), false);
  bool changed = false;
  for (size_t n = 0; n < nodes.size(); ++n) {
    std::vector<size_t> removed;
    std::optional<GraphNode> fused = fuse(graph, chains, n, removed);
    if (!fused) {
      continue;
    }
    rewritten[n] = std::move(*fused);
    for (size_t r : removed) {
      drop[r] = true;
    }
    changed = true;
  }
  if (!changed) {
    return ok_status();
  }
  graph.replace_nodes(std::move(rewritten), drop);
  return ok_status();
}

}  // namespace staticlm
