// SPDX-License-Identifier: Apache-2.0
#include "staticlm/partition/partition_formation.h"

#include <algorithm>
#include <numeric>
#include <queue>
#include <set>

namespace staticlm {

NodeDependencies node_dependencies(const Graph& graph) {
  const auto nodes = graph.nodes();
  std::vector<std::set<int32_t>> successors(nodes.size());
  std::vector<std::vector<int32_t>> readers(graph.num_values());
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (ValueId input : nodes[n].inputs) {
      if (input == kNoValue) {
        continue;
      }
      readers[static_cast<size_t>(input)].push_back(static_cast<int32_t>(n));
      const GraphValue& value = graph.value(input);
      if (value.kind == ValueKind::kNodeOutput && value.producer != static_cast<int32_t>(n)) {
        successors[static_cast<size_t>(value.producer)].insert(static_cast<int32_t>(n));
      }
    }
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (const InPlaceUpdate& update : in_place_updates(nodes[n].op, nodes[n].attributes)) {
      for (int32_t reader : readers[static_cast<size_t>(nodes[n].inputs[update.input])]) {
        if (reader != static_cast<int32_t>(n)) {
          successors[static_cast<size_t>(reader)].insert(static_cast<int32_t>(n));
        }
      }
    }
  }
  NodeDependencies out;
  for (const std::set<int32_t>& set : successors) {
    out.successors.emplace_back(set.begin(), set.end());
  }
  return out;
}

namespace {

// Groups of nodes under contraction: every node starts alone; merging two groups contracts them.
class Contraction {
 public:
  explicit Contraction(const NodeDependencies& dependencies)
      : dependencies_(dependencies), parent_(dependencies.size()), members_(dependencies.size()) {
    std::iota(parent_.begin(), parent_.end(), 0);
    for (size_t n = 0; n < members_.size(); ++n) {
      members_[n] = {static_cast<int32_t>(n)};
    }
  }

  int32_t group(int32_t node) {
    while (parent_[static_cast<size_t>(node)] != node) {
      parent_[static_cast<size_t>(node)] = parent_[static_cast<size_t>(parent_[static_cast<size_t>(node)])];
      node = parent_[static_cast<size_t>(node)];
    }
    return node;
  }

  // Merging a and b keeps the contracted graph acyclic iff neither reaches the other through a
  // third group (a direct edge between them just becomes internal).
  bool can_merge(int32_t a, int32_t b) { return !reaches_through_third(a, b) && !reaches_through_third(b, a); }

  void merge(int32_t a, int32_t b) {
    if (members_[static_cast<size_t>(a)].size() < members_[static_cast<size_t>(b)].size()) {
      std::swap(a, b);
    }
    parent_[static_cast<size_t>(b)] = a;
    auto& into = members_[static_cast<size_t>(a)];
    auto& from = members_[static_cast<size_t>(b)];
    into.insert(into.end(), from.begin(), from.end());
    from.clear();
  }

  const std::vector<int32_t>& members(int32_t group_id) const { return members_[static_cast<size_t>(group_id)]; }

  std::vector<int32_t> successor_groups(int32_t group_id) {
    std::vector<int32_t> out;
    for (int32_t member : members_[static_cast<size_t>(group_id)]) {
      for (int32_t next : dependencies_.successors[static_cast<size_t>(member)]) {
        const int32_t g = group(next);
        if (g != group_id) {
          out.push_back(g);
        }
      }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

 private:
  // Whether a path from group `from` reaches group `to` after passing through another group.
  // Reaching any node of a group reaches all its successors: the group runs as one.
  bool reaches_through_third(int32_t from, int32_t to) {
    std::vector<bool> visited(parent_.size(), false);
    std::vector<int32_t> stack;
    for (int32_t g : successor_groups(from)) {
      if (g != to) {
        visited[static_cast<size_t>(g)] = true;
        stack.push_back(g);
      }
    }
    while (!stack.empty()) {
      const int32_t g = stack.back();
      stack.pop_back();
      for (int32_t next : successor_groups(g)) {
        if (next == to) {
          return true;
        }
        if (next != from && !visited[static_cast<size_t>(next)]) {
          visited[static_cast<size_t>(next)] = true;
          stack.push_back(next);
        }
      }
    }
    return false;
  }

  const NodeDependencies& dependencies_;
  std::vector<int32_t> parent_;
  std::vector<std::vector<int32_t>> members_;
};

}  // namespace

Partitioning form_partitions(const NodeDependencies& dependencies, const std::vector<bool>& tagged) {
  const size_t count = dependencies.size();
  Contraction contraction(dependencies);
  std::vector<std::vector<int32_t>> predecessors(count);
  for (size_t n = 0; n < count; ++n) {
    for (int32_t next : dependencies.successors[n]) {
      predecessors[static_cast<size_t>(next)].push_back(static_cast<int32_t>(n));
    }
  }
  // First grow partitions along edges, in node order, so producers and consumers end up together.
  for (size_t n = 0; n < count; ++n) {
    if (!tagged[n]) {
      continue;
    }
    for (int32_t before : predecessors[n]) {
      if (!tagged[static_cast<size_t>(before)]) {
        continue;
      }
      const int32_t a = contraction.group(before);
      const int32_t b = contraction.group(static_cast<int32_t>(n));
      if (a != b && contraction.can_merge(a, b)) {
        contraction.merge(a, b);
      }
    }
  }
  // Then merge any two partitions that can still be merged, in rounds until a round merges none
  // (a merge can make another possible: C -> A -> D stops C+D until A joins C).
  bool merged = true;
  while (merged) {
    merged = false;
    std::vector<int32_t> groups;
    for (size_t n = 0; n < count; ++n) {
      if (tagged[n] && contraction.group(static_cast<int32_t>(n)) == static_cast<int32_t>(n)) {
        groups.push_back(static_cast<int32_t>(n));
      }
    }
    for (size_t i = 0; i < groups.size(); ++i) {
      for (size_t j = i + 1; j < groups.size(); ++j) {
        const int32_t a = contraction.group(groups[i]);
        const int32_t b = contraction.group(groups[j]);
        if (a != b && contraction.can_merge(a, b)) {
          contraction.merge(a, b);
          merged = true;
        }
      }
    }
  }

  Partitioning out;
  out.partition_of.assign(count, -1);
  std::vector<int32_t> number(count, -1);
  for (size_t n = 0; n < count; ++n) {
    if (!tagged[n]) {
      continue;
    }
    const auto g = static_cast<size_t>(contraction.group(static_cast<int32_t>(n)));
    if (number[g] < 0) {
      number[g] = out.count++;
    }
    out.partition_of[n] = number[g];
  }
  return out;
}

std::vector<ScheduledGroup> schedule_groups(const NodeDependencies& dependencies, const Partitioning& partitioning) {
  const size_t count = dependencies.size();
  // Group id: partition p -> p; untagged node n -> count(partitions) + n.
  const auto partitions = static_cast<size_t>(partitioning.count);
  auto group_of = [&](size_t node) {
    const int32_t p = partitioning.partition_of[node];
    return p >= 0 ? static_cast<size_t>(p) : partitions + node;
  };
  const size_t groups = partitions + count;
  std::vector<int32_t> lowest_node(groups, -1);
  std::vector<std::set<size_t>> successors(groups);
  std::vector<int32_t> indegree(groups, 0);
  for (size_t n = 0; n < count; ++n) {
    const size_t g = group_of(n);
    if (lowest_node[g] < 0) {
      lowest_node[g] = static_cast<int32_t>(n);
    }
    for (int32_t next : dependencies.successors[n]) {
      const size_t h = group_of(static_cast<size_t>(next));
      if (h != g && successors[g].insert(h).second) {
        ++indegree[h];
      }
    }
  }
  using Ready = std::pair<int32_t, size_t>;  // (lowest node, group)
  std::priority_queue<Ready, std::vector<Ready>, std::greater<>> ready;
  for (size_t g = 0; g < groups; ++g) {
    if (lowest_node[g] >= 0 && indegree[g] == 0) {
      ready.push({lowest_node[g], g});
    }
  }
  std::vector<ScheduledGroup> order;
  while (!ready.empty()) {
    const size_t g = ready.top().second;
    ready.pop();
    order.push_back(g < partitions ? ScheduledGroup{static_cast<int32_t>(g), -1}
                                   : ScheduledGroup{-1, static_cast<int32_t>(g - partitions)});
    for (size_t h : successors[g]) {
      if (--indegree[h] == 0) {
        ready.push({lowest_node[h], h});
      }
    }
  }
  return order;
}

}  // namespace staticlm
