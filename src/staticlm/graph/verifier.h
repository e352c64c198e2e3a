// SPDX-License-Identifier: Apache-2.0
// Graph verification: every reference in range, every node's outputs equal to what
// infer_outputs gives for its inputs, each value produced once, nodes in an order where each
// input is defined before use (so the graph is acyclic), in-place updates whose input is not
// read after the update, and graph outputs that are node outputs.
#pragma once

#include "staticlm/core/status.h"
#include "staticlm/graph/graph.h"

namespace staticlm {

// Fails with InvalidArgument naming the node (index, op, name) and the problem.
Status verify_graph(const Graph& graph);

}  // namespace staticlm
