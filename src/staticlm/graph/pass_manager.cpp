// SPDX-License-Identifier: Apache-2.0
#include "staticlm/graph/pass_manager.h"

#include <utility>

#include "staticlm/graph/verifier.h"

namespace staticlm {

void PassManager::add(std::unique_ptr<GraphPass> pass) {
  passes_.push_back(std::move(pass));
}

Status PassManager::run(Graph& graph) const {
  // Verifying first keeps a bad input graph from being blamed on the first pass.
  Status input_ok = verify_graph(graph);
  if (!input_ok.ok()) {
    return input_ok.with_context("before the first pass");
  }
  for (size_t i = 0; i < passes_.size(); ++i) {
    if (passes_[i] == nullptr) {
      return invalid_argument("pass ", i, " is null");
    }
    const std::string context = str_cat("pass '", passes_[i]->name(), "'");
    Status ran = passes_[i]->run(graph);
    if (!ran.ok()) {
      return ran.with_context(context);
    }
    Status verified = verify_graph(graph);
    if (!verified.ok()) {
      return verified.with_context(str_cat(context, ": left an invalid graph"));
    }
  }
  return ok_status();
}

}  // namespace staticlm
