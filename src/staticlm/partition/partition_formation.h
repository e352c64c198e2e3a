// SPDX-License-Identifier: Apache-2.0
// Forming partitions: which tagged nodes run together as one delegate call, and the order the
// resulting calls and the nodes left outside run in.
//
// The nodes of a method form a DAG whose edges are data dependencies plus the ordering an
// in-place update needs: every other reader of the value a node overwrites must run before it
// (a write-after-read edge). A partition is contracted to one instruction, so partitions must
// never create a cycle with the nodes left outside: if a path leaves a partition and comes back
// to it, the partition could not run as one call. form_partitions keeps that invariant at every
// merge, so the result is acyclic by construction, and merges until no two partitions can be
// merged without breaking it (maximal partitions).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "staticlm/graph/graph.h"

namespace staticlm {

// successors[n]: the nodes that must run after node n (ascending, no duplicates).
struct NodeDependencies {
  std::vector<std::vector<int32_t>> successors;
  size_t size() const { return successors.size(); }
};

// Data and write-after-read edges of a verified graph.
NodeDependencies node_dependencies(const Graph& graph);

struct Partitioning {
  std::vector<int32_t> partition_of;  // per node: its partition, or -1 for an untagged node
  int32_t count = 0;                  // partitions are numbered 0.. in order of their lowest node
};

// Groups every tagged node into a partition. Precondition: `dependencies` is acyclic and
// `tagged` has one entry per node.
Partitioning form_partitions(const NodeDependencies& dependencies, const std::vector<bool>& tagged);

// One instruction after contraction: a whole partition, or one untagged node.
struct ScheduledGroup {
  int32_t partition = -1;  // >= 0: this partition
  int32_t node = -1;       // for partition -1: this node
};

// A topological order of the contracted graph; among ready groups, the one holding the lowest
// node runs first, so an unpartitioned method keeps its node order.
std::vector<ScheduledGroup> schedule_groups(const NodeDependencies& dependencies, const Partitioning& partitioning);

}  // namespace staticlm
