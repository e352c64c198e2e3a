// SPDX-License-Identifier: Apache-2.0
// Cutting one partition out of a method graph as a standalone graph for Backend::preprocess.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/graph/graph.h"

namespace staticlm {

struct ExtractedPartition {
  std::unique_ptr<Graph> graph;  // over the method's constant table
  // The method-graph value behind each subgraph input ("input_<i>") and output ("output_<j>").
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
};

// Builds the subgraph of `nodes` (ascending node indices of `graph`). Its inputs are the values
// the nodes read that are produced outside them (graph inputs included), in first-use order;
// constants stay constants. Its outputs are the values the nodes produce that a node outside
// reads or that are graph outputs, in production order, except in-place updates of a value
// produced outside: the delegate updates that input, and outside readers read the same storage.
// `root` is alias_roots(graph). Fails with the graph builder's error (InvalidArgument) if a node
// does not type-check in the subgraph, which would be a partitioner bug.
Result<ExtractedPartition> extract_partition(const Graph& graph, std::span<const int32_t> nodes,
                                             std::span<const ValueId> root);

}  // namespace staticlm
