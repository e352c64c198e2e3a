// SPDX-License-Identifier: Apache-2.0
// Graph passes and the manager that runs them in order, verifying the graph after each, so a
// broken pass is caught at the pass that broke it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "staticlm/core/status.h"
#include "staticlm/graph/graph.h"

namespace staticlm {

class GraphPass {
 public:
  virtual ~GraphPass() = default;
  virtual std::string_view name() const = 0;
  // Rewrites `graph`; returns an error to stop the pipeline.
  virtual Status run(Graph& graph) = 0;
};

class PassManager {
 public:
  void add(std::unique_ptr<GraphPass> pass);
  // Runs every pass in order; after each, verify_graph. Errors are prefixed with the pass name.
  Status run(Graph& graph) const;
  size_t size() const { return passes_.size(); }

 private:
  std::vector<std::unique_ptr<GraphPass>> passes_;
};

}  // namespace staticlm
