// SPDX-License-Identifier: Apache-2.0
// Partitioner: puts the nodes a backend can take into delegate calls and lowers the program.
//
// Partitioner::from_options routes every option through the backend's schema (resolve_options):
// options routed to "partitioner" become PartitionerSettings, the rest stay typed settings the
// backend's compile-spec builders read in preprocess. run() then, for every method:
//   1. runs the backend's passes (through PassManager, which verifies after each), so every
//      entry point gets the same graph without scheduling passes itself;
//   2. tags the nodes the backend supports, minus skip_node_id_set / skip_node_op_set (and
//      in-place updates under skip_mutable_buffer);
//   3. forms maximal partitions that create no cycle with the nodes left outside
//      (partition_formation.h) and schedules them;
//   4. lowers each partition through Backend::preprocess into one delegate whose output_order
//      records which internal output is which call output, and the rest into portable kernel
//      calls, planning memory over the resulting steps.
// The placement report says where every node went and why; it is stored in the program.
#pragma once

#include <set>
#include <span>
#include <string>
#include <vector>

#include "staticlm/backends/api/backend.h"
#include "staticlm/core/result.h"
#include "staticlm/format/program_spec.h"
#include "staticlm/graph/graph.h"
#include "staticlm/lowering/lower_program.h"
#include "staticlm/partition/placement_report.h"

namespace staticlm {

struct PartitionerSettings {
  std::vector<std::string> skip_node_ids;  // INDEX, METHOD:INDEX or a node name
  std::set<OpKind> skip_ops;
  bool skip_mutable_buffer = false;
};

struct PartitionMethod {
  std::string name;
  Graph* graph = nullptr;  // the backend's passes rewrite it
};

struct PartitionRunOptions {
  // Any node left to the portable kernels is an error naming it (`--no-fallback`).
  bool no_fallback = false;
};

struct PartitionedProgram {
  ProgramSpec spec;
  PlacementReport report;
};

class Partitioner {
 public:
  // Resolves `options` against the backend's schema and SDK. Errors are resolve_options' (each
  // naming the option), plus InvalidArgument for an unknown op in skip_node_op_set.
  // The backend must outlive the Partitioner.
  static Result<Partitioner> from_options(const Backend& backend, const OptionMap& options);

  const Backend& backend() const { return *backend_; }
  // The effective settings: every option, given or defaulted.
  const ResolvedOptions& options() const { return options_; }
  const PartitionerSettings& settings() const { return settings_; }

  // Partitions and lowers `methods` (which share one constant table) into a program. Fails with
  // a pass's error (prefixed with its name), InvalidArgument for a skip_node_id_set entry that
  // matches no node, FailedPrecondition under no_fallback when a node is left to the portable
  // kernels (naming it and why), the backend's preprocess error (with the method and
  // partition), or lowering's errors.
  Result<PartitionedProgram> run(std::span<const PartitionMethod> methods, const LowerOptions& lower,
                                 const PartitionRunOptions& run_options = {}) const;

 private:
  Partitioner() = default;
  const Backend* backend_ = nullptr;
  ResolvedOptions options_;
  PartitionerSettings settings_;
};

}  // namespace staticlm
