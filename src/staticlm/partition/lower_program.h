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

}  // namespace staticlm
