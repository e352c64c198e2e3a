// SPDX-License-Identifier: Apache-2.0
// Partition formation as a property over random DAGs: every tagged node lands in exactly one
// partition, contracting each partition to one node leaves the graph acyclic, no two partitions
// could be merged without a cycle, and the schedule is a topological order of the contraction.
// The checks here are written independently of the code under test (Kahn's algorithm on the
// contracted graph).
#include "staticlm/partition/partition_formation.h"

#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>

namespace staticlm {
namespace {

NodeDependencies random_dag(std::mt19937& rng, size_t nodes, double edge_probability) {
  std::bernoulli_distribution edge(edge_probability);
  NodeDependencies dag;
  dag.successors.resize(nodes);
  for (size_t i = 0; i < nodes; ++i) {
    for (size_t j = i + 1; j < nodes; ++j) {
      if (edge(rng)) {
        dag.successors[i].push_back(static_cast<int32_t>(j));
      }
    }
  }
  return dag;
}

// Group label per node: partitions keep their number, untagged nodes get their own label.
std::vector<int64_t> labels(const std::vector<int32_t>& partition_of) {
  std::vector<int64_t> out(partition_of.size());
  for (size_t n = 0; n < out.size(); ++n) {
    out[n] = partition_of[n] >= 0 ? partition_of[n] : 1000000 + static_cast<int64_t>(n);
  }
  return out;
}

bool contracted_is_acyclic(const NodeDependencies& dag, const std::vector<int64_t>& label) {
  std::map<int64_t, std::set<int64_t>> edges;
  std::map<int64_t, int> indegree;
  for (int64_t l : label) indegree.emplace(l, 0);
  for (size_t u = 0; u < dag.size(); ++u) {
    for (int32_t v : dag.successors[u]) {
      const int64_t a = label[u];
      const int64_t b = label[static_cast<size_t>(v)];
      if (a != b && edges[a].insert(b).second) {
        ++indegree[b];
      }
    }
  }
  std::vector<int64_t> ready;
  for (const auto& [l, d] : indegree) {
    if (d == 0) ready.push_back(l);
  }
  size_t visited = 0;
  while (!ready.empty()) {
    const int64_t l = ready.back();
    ready.pop_back();
    ++visited;
    for (int64_t next : edges[l]) {
      if (--indegree[next] == 0) ready.push_back(next);
    }
  }
  return visited == indegree.size();
}

TEST(PartitionFormationTest, RandomGraphsGiveAcyclicMaximalPartitions) {
  std::mt19937 rng(20240611);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t nodes = 1 + static_cast<size_t>(rng() % 28);
    const double density = 0.05 + 0.3 * static_cast<double>(rng() % 100) / 100.0;
    const NodeDependencies dag = random_dag(rng, nodes, density);
    std::bernoulli_distribution tag(0.65);
    std::vector<bool> tagged(nodes);
    for (size_t i = 0; i < nodes; ++i) tagged[i] = tag(rng);

    const Partitioning parts = form_partitions(dag, tagged);
    ASSERT_EQ(parts.partition_of.size(), nodes);
    std::set<int32_t> seen;
    for (size_t n = 0; n < nodes; ++n) {
      EXPECT_EQ(parts.partition_of[n] >= 0, static_cast<bool>(tagged[n])) << "trial " << trial << " node " << n;
      if (parts.partition_of[n] >= 0) {
        EXPECT_LT(parts.partition_of[n], parts.count);
        seen.insert(parts.partition_of[n]);
      }
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(parts.count)) << "partition numbers are dense";

    const std::vector<int64_t> label = labels(parts.partition_of);
    ASSERT_TRUE(contracted_is_acyclic(dag, label)) << "trial " << trial << ": a partition creates a cycle";

    // Maximal: merging any two partitions would create a cycle.
    for (int32_t a = 0; a < parts.count; ++a) {
      for (int32_t b = a + 1; b < parts.count; ++b) {
        std::vector<int64_t> merged = label;
        for (int64_t& l : merged) {
          if (l == b) l = a;
        }
        EXPECT_FALSE(contracted_is_acyclic(dag, merged))
            << "trial " << trial << ": partitions " << a << " and " << b << " could be one";
      }
    }

    // The schedule runs every group once, after everything it depends on.
    const std::vector<ScheduledGroup> order = schedule_groups(dag, parts);
    std::map<int64_t, size_t> position;
    for (size_t i = 0; i < order.size(); ++i) {
      const int64_t l = order[i].partition >= 0 ? order[i].partition : 1000000 + order[i].node;
      EXPECT_TRUE(position.emplace(l, i).second) << "group scheduled twice";
    }
    EXPECT_EQ(position.size(), std::set<int64_t>(label.begin(), label.end()).size());
    for (size_t u = 0; u < nodes; ++u) {
      for (int32_t v : dag.successors[u]) {
        if (label[u] != label[static_cast<size_t>(v)]) {
          EXPECT_LT(position[label[u]], position[label[static_cast<size_t>(v)]]) << "trial " << trial;
        }
      }
    }
  }
}

TEST(PartitionFormationTest, AnUntaggedNodeBetweenTwoTaggedOnesSplitsThem) {
  // 0 -> 1 -> 2 and 0 -> 2, with 1 untagged: {0, 2} as one partition would need 1 inside it.
  NodeDependencies dag;
  dag.successors = {{1, 2}, {2}, {}};
  const std::vector<bool> tagged = {true, false, true};
  const Partitioning parts = form_partitions(dag, tagged);
  EXPECT_EQ(parts.count, 2);
  EXPECT_NE(parts.partition_of[0], parts.partition_of[2]);
  const std::vector<ScheduledGroup> order = schedule_groups(dag, parts);
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0].partition, parts.partition_of[0]);
  EXPECT_EQ(order[1].node, 1);
  EXPECT_EQ(order[2].partition, parts.partition_of[2]);
}

TEST(PartitionFormationTest, IndependentBranchesShareOnePartition) {
  // 0 -> 1 (untagged) -> 3 and 2 -> 3 (untagged 3): 0 and 2 are independent, so they merge.
  NodeDependencies dag;
  dag.successors = {{1}, {3}, {3}, {}};
  const std::vector<bool> tagged = {true, false, true, false};
  const Partitioning parts = form_partitions(dag, tagged);
  EXPECT_EQ(parts.count, 1);
  EXPECT_EQ(parts.partition_of[0], parts.partition_of[2]);
}

TEST(PartitionFormationTest, UnpartitionedGraphKeepsNodeOrder) {
  NodeDependencies dag;
  dag.successors = {{2}, {2}, {}, {}};
  const std::vector<bool> tagged = {false, false, false, false};
  const std::vector<ScheduledGroup> order = schedule_groups(dag, form_partitions(dag, tagged));
  ASSERT_EQ(order.size(), 4u);
  for (int32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(order[static_cast<size_t>(i)].node, i);
  }
}

}  // namespace
}  // namespace staticlm
