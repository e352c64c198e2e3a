// Lowers verified graphs (one per method) that share one ConstantTable into a ProgramSpec the
// program writer serializes: plans each method's memory, assigns every value its storage,
// turns nodes into kernel calls, and emits each constant that any method uses exactly once.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/format/program_spec.h"
#include "staticlm/graph/graph.h"

namespace staticlm {

struct MethodGraph {
  std::string name;
  const Graph* graph = nullptr;
};

struct LowerOptions {
  std::vector<MetadataSpec> metadata;
  std::vector<EmbeddedFileSpec> files;
  uint32_t arena_alignment = 64;
};

// Fails with InvalidArgument when a graph does not verify, the methods do not share one
// constant table, or a graph output is an in-place update of a graph input (mark the input
// mutable and drop the output instead: the caller already owns that memory).
Result<ProgramSpec> lower_to_program(std::span<const MethodGraph> methods, const LowerOptions& options);

// One instruction of a partitioned method: a node left to the portable kernels, or a call of
// delegate `delegate` (an index into the program's delegates) reading `inputs` and writing
// `outputs`, graph values of the method (in-place chain members lower to their root's value).
struct LoweringStep {
  int32_t node = -1;  // >= 0: a kernel call of this node
  uint32_t delegate = 0;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
};

// A method whose nodes the partitioner scheduled into steps. Every node of the graph is either
// one kernel step or inside one delegate; values only a delegate reads and writes never appear
// in the program (the delegate owns them).
struct ScheduledMethod {
  std::string name;
  const Graph* graph = nullptr;
  std::vector<LoweringStep> steps;  // in execution order
};

// Lowers scheduled methods with the program's delegates: plans each method's arena over its
// steps (step_memory_plan.h), emits the constants that kernel calls or delegate calls read, and
// marks inputs that any node (delegated or not) updates in place mutable. Errors as
// lower_to_program, plus InvalidArgument for a step naming a node or delegate that does not exist.
Result<ProgramSpec> lower_scheduled_program(std::span<const ScheduledMethod> methods,
                                            std::vector<DelegateSpec> delegates, const LowerOptions& options);

}  // namespace staticlm
