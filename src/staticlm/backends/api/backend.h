// SPDX-License-Identifier: Apache-2.0
// Backend: the export side of a delegate backend.
//
// A backend declares its option schema, says which graph nodes it can take, contributes graph
// passes the partitioner runs before asking (decompositions, fusions into ops of the set), and
// turns each partition it was given into a delegate payload (blob, compile specs, named data)
// stored in the program. Its runtime side (runtime/backend_runtime.h, a separate library that
// links no graph IR) inits and executes those delegates when a program is loaded; both sides
// share the backend id. Backends are registered explicitly: one register function per side,
// called from one place (builtin/).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/core/byte_source.h"
#include "staticlm/format/program_spec.h"
#include "staticlm/graph/graph.h"
#include "staticlm/graph/pass_manager.h"
#include "staticlm/options/option_schema.h"
#include "staticlm/runtime/backend_runtime.h"

namespace staticlm {

// A backend's answer for one node: it takes it, or why not (shown in the placement report).
struct NodeSupport {
  bool supported = false;
  std::string reason;

  static NodeSupport yes() { return {true, {}}; }
  static NodeSupport no(std::string why) { return {false, std::move(why)}; }
};

// One partition as preprocess sees it: a standalone graph whose inputs are the values entering
// the partition (in delegate-call order) and whose outputs are the values leaving it (the
// call's outputs, in order). Constants stay constants of the shared table, so a backend may bake
// them into its blob or ask for them at run time (DelegatePayload::runtime_constants).
struct PartitionSubgraph {
  std::string method;
  size_t index = 0;  // partition index within the method
  const Graph* graph = nullptr;
  std::vector<int32_t> nodes;  // the method graph's node indices it holds, ascending
};

// What preprocess produces for one partition.
struct DelegatePayload {
  std::shared_ptr<ByteSource> blob;
  std::vector<CompileSpecEntry> compile_specs;
  // output_order[i] = the subgraph output that the delegate's internal output i is. Empty means
  // the delegate produces them in subgraph order.
  std::vector<uint32_t> output_order;
  // Constants the delegate reads at run time: they are appended, in this order, to the
  // delegate call's inputs (zero-copy views of the program's constants). Ids are of the shared
  // ConstantTable; each must be a constant the subgraph uses.
  std::vector<ConstantId> runtime_constants;
  // Data stored once per program under each key (packed weights, say), which the runtime side
  // reads from the NamedDataMap it is given at init. Partitions of every method may name the
  // same key: the program stores it once, so a key must always name the same bytes (the
  // partitioner refuses a key repeated with another size).
  std::vector<NamedDataSpec> named_data;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // The id programs store in their delegates; the runtime side has the same id.
  virtual std::string_view id() const = 0;
  // One line for `staticlm backends`.
  virtual std::string_view summary() const = 0;
  virtual const OptionSchema& option_schema() const = 0;
  // The SDK that version-gated options are checked against (name empty: none).
  virtual SdkInfo sdk() const { return {}; }
  // Passes the partitioner runs, in order, on every method graph before it asks supports().
  virtual std::vector<std::unique_ptr<GraphPass>> passes(const ResolvedOptions& options) const {
    (void)options;
    return {};
  }
  // The format the backend's passes store the model's matrices in under `options`, where they
  // convert them (nullopt: as the exporter wrote them), named as ops/weight_format.h names it
  // ("bf16", "int8_g32"); the exporter records it in the program's weight_dtype metadata.
  virtual std::optional<std::string> stored_weight_format(const ResolvedOptions& options) const {
    (void)options;
    return std::nullopt;
  }
  // Whether this backend can take node `node` of `graph` under `options`.
  virtual NodeSupport supports(const Graph& graph, size_t node, const ResolvedOptions& options) const = 0;
  // Builds the delegate for one partition. Fails with Unavailable when an SDK the backend needs
  // is missing, Unimplemented for a partition it cannot lower after all.
  virtual Result<DelegatePayload> preprocess(const PartitionSubgraph& partition,
                                             const ResolvedOptions& options) const = 0;
};

// Backends by id, filled explicitly.
class BackendRegistry {
 public:
  // Fails with InvalidArgument when the id is taken, Internal when the schema is inconsistent.
  Status add(std::shared_ptr<const Backend> backend);
  const Backend* find(std::string_view id) const;
  // Like find, but NotFound lists the registered ids (with a suggestion).
  Result<const Backend*> get(std::string_view id) const;
  // Every backend, by id.
  std::vector<const Backend*> all() const;

 private:
  std::map<std::string, std::shared_ptr<const Backend>, std::less<>> backends_;
};

// The options every backend's schema carries for the partitioner itself (route "partitioner"):
// skip_node_id_set, skip_node_op_set and skip_mutable_buffer. docs/backends.md describes them.
std::vector<OptionSpec> partitioner_option_specs();

}  // namespace staticlm
