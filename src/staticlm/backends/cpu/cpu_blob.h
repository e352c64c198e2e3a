// The cpu backend's delegate blob (cpu_delegate.fbs): a partition's nodes, their attributes and
// a value table where each value is a delegate input, a delegate output or a slice of the
// delegate's own arena. Constants are not copied: the partitioner passes them to the delegate
// call as inputs (zero-copy views of the program's constants).
//
// The blob is untrusted at load: read_cpu_blob verifies the flatbuffer and then every index,
// spec and write before anything runs, as Program::load_method does for kernel calls.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/core/tensor.h"
#include "staticlm/graph/graph.h"
#include "staticlm/ops/attributes.h"
#include "staticlm/ops/op_set.h"

namespace staticlm {

inline constexpr uint32_t kCpuBlobVersion = 1;

// Serializes a partition subgraph. Delegate inputs are the subgraph's inputs followed by
// `runtime_constants` (every constant the subgraph reads must be one). `output_order[i]` is the
// subgraph output the delegate produces as its internal output i (empty: subgraph order).
// Internal values are planned into the delegate's arena with the graph memory planner.
// Fails with InvalidArgument when a constant is missing from runtime_constants, output_order is
// not a permutation, or the graph is not plannable.
Result<std::vector<uint8_t>> write_cpu_blob(const Graph& subgraph, std::span<const ConstantId> runtime_constants,
                                            std::span<const uint32_t> output_order = {});

enum class CpuValueStorage : uint8_t { kInput = 0, kOutput = 1, kArena = 2 };

struct CpuValue {
  TensorSpec spec;
  CpuValueStorage storage = CpuValueStorage::kArena;
  uint64_t index = 0;
};

struct CpuNode {
  OpKind op = OpKind::kAdd;
  std::vector<int32_t> inputs;  // value indices, -1 absent
  std::vector<uint32_t> outputs;
  Attributes attributes;
};

// A verified blob.
struct CpuPlan {
  std::vector<CpuValue> values;
  std::vector<CpuNode> nodes;
  std::vector<TensorSpec> output_specs;  // internal output order
  std::vector<uint32_t> updated_inputs;  // call inputs some node updates in place, ascending
  uint64_t arena_size = 0;
  uint32_t arena_alignment = 64;
};

// Verifies `blob` against the specs of the values the delegate call passes in. Fails with
// InvalidArgument (or DataLoss for bytes that are not a cpu delegate blob) naming the value,
// node or field: a wrong identifier or version, a value whose dtype, shape or storage index is
// invalid, inputs that do not match the call, an arena slice out of bounds or misaligned, a node
// that does not type-check, reads a value before it is written, writes an input it does not
// update in place, or an output never written.
Result<CpuPlan> read_cpu_blob(std::span<const uint8_t> blob, std::span<const TensorSpec> call_inputs);

}  // namespace staticlm
