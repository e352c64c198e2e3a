// SPDX-License-Identifier: Apache-2.0
// In-place chains: an op that updates an input in place (in_place_updates) defines an output that
// is the same storage as that input. Lowering emits a whole chain as one program value, its root.
#pragma once

#include <vector>

#include "staticlm/graph/graph.h"

namespace staticlm {

// root[v] is the value that owns v's storage: v itself, or the first value of its in-place
// chain. Precondition: a verified graph (nodes in dependency order).
std::vector<ValueId> alias_roots(const Graph& graph);

}  // namespace staticlm
