// SPDX-License-Identifier: Apache-2.0
// The one lowering: verified graphs with their schedules (graph/memory_planner.h) into the plain
// MethodSpec / ProgramSpec the format writes. A method nothing delegates is scheduled one step
// per node; a partitioned one has a step per delegate call; a delegate that runs an instruction
// list (the cpu backend) lowers its partition subgraph with the same code into its blob.
//
// Per method: the arena is planned over the steps, every value a step touches gets its storage
// (input, output, constant or named data, arena), in-place chains become one value (their root),
// inputs that any node updates in place (delegated or not) are marked mutable, and each step
// becomes a kernel call or a delegate call.
#pragma once

#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/format/program_spec.h"
#include "staticlm/graph/graph.h"
#include "staticlm/graph/memory_planner.h"

namespace staticlm {

// A method graph and the steps it runs in. Steps with node < 0 are delegate calls:
// `delegates[i]` below says which program delegate each one calls.
struct ScheduledMethod {
  std::string name;
  const Graph* graph = nullptr;
  std::vector<ScheduleStep> steps;      // in execution order
  std::vector<uint32_t> step_delegate;  // per step: the delegate index of a delegate step
};

// How a lowered method stores the constants it reads (a call input of a kernel or delegate).
struct ConstantLowering {
  // Program constants: the index of each constant in ProgramSpec.constants.
  const std::map<ConstantId, uint32_t>* program_index = nullptr;
  // When program_index is null: named data, under this key (default: the constant's name).
  std::function<std::string(ConstantId)> named_data_key;
};

struct MethodLoweringOptions {
  ConstantLowering constants;
  uint32_t arena_alignment = 64;
  // output_order[i] = the graph output that is the method's output i (empty: graph order).
  std::vector<uint32_t> output_order;
};

// Lowers one method. Fails with InvalidArgument when the graph does not verify, a step names a
// node that does not exist or is scheduled twice, the output order is not a permutation, or a
// graph output is an in-place update of a graph input (mark the input mutable and drop the
// output instead: the caller already owns that memory); with the planner's errors.
Result<MethodSpec> lower_method(const ScheduledMethod& method, const MethodLoweringOptions& options);

struct LowerOptions {
  std::vector<MetadataSpec> metadata;
  std::vector<EmbeddedFileSpec> files;
  uint32_t arena_alignment = 64;
};

// Lowers methods that share one constant table with the program's delegates and named data:
// each constant a kernel or delegate call reads is emitted once, in table order. Errors as
// lower_method, plus InvalidArgument when there is no method, the methods do not share one
// constant table, or a delegate step names a delegate that does not exist.
Result<ProgramSpec> lower_program(std::span<const ScheduledMethod> methods, std::vector<DelegateSpec> delegates,
                                  std::vector<NamedDataSpec> named_data, const LowerOptions& options);

struct MethodGraph {
  std::string name;
  const Graph* graph = nullptr;
};

// lower_program with every node of every method a step of its own and no delegates.
Result<ProgramSpec> lower_to_program(std::span<const MethodGraph> methods, const LowerOptions& options);

}  // namespace staticlm
