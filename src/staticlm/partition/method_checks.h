// Checks both lowering paths (plain and scheduled) make before lowering any method: there is at
// least one method, all share one constant table, and each graph verifies.
#pragma once

#include <span>

#include "staticlm/core/status.h"
#include "staticlm/graph/verifier.h"

namespace staticlm {

// `Method` has `name` and `graph` (const Graph*).
template <typename Method>
Status check_method_graphs(std::span<const Method> methods) {
  if (methods.empty()) {
    return invalid_argument("a program needs at least one method");
  }
  const ConstantTable* table = &methods[0].graph->constants();
  for (const Method& method : methods) {
    if (&method.graph->constants() != table) {
      return invalid_argument("method '", method.name, "' uses a different constant table than method '",
                              methods[0].name, "'; a program's methods must share one");
    }
    Status verified = verify_graph(*method.graph);
    if (!verified.ok()) {
      return verified.with_context(str_cat("method '", method.name, "'"));
    }
  }
  return ok_status();
}

}  // namespace staticlm
