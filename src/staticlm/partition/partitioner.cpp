// SPDX-License-Identifier: Apache-2.0
#include "staticlm/partition/partitioner.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "staticlm/graph/alias_roots.h"
#include "staticlm/graph/pass_manager.h"
#include "staticlm/ops/weight_format.h"
#include "staticlm/ops/weight_layout.h"
#include "staticlm/options/did_you_mean.h"
#include "staticlm/partition/partition_formation.h"
#include "staticlm/partition/partition_subgraph.h"

namespace staticlm {

Result<Partitioner> Partitioner::from_options(const Backend& backend, const OptionMap& options) {
  Partitioner out;
  out.backend_ = &backend;
  STATICLM_ASSIGN_OR_RETURN(out.options_, resolve_options(backend.option_schema(), options, backend.sdk()));
  if (out.options_.find("skip_node_id_set") != nullptr) {
    STATICLM_ASSIGN_OR_RETURN(out.settings_.skip_node_ids, out.options_.get_string_set("skip_node_id_set"));
  }
  if (out.options_.find("skip_node_op_set") != nullptr) {
    STATICLM_ASSIGN_OR_RETURN(std::vector<std::string> ops, out.options_.get_string_set("skip_node_op_set"));
    std::vector<std::string> known;
    for (const OpDef& def : all_ops()) {
      known.emplace_back(def.name);
    }
    for (const std::string& name : ops) {
      auto op = find_op(name);
      if (!op.ok()) {
        return invalid_argument("option 'skip_node_op_set': unknown op '", name, "'", did_you_mean(name, known),
                                " (ops: ", join(known, ", "), ")");
      }
      out.settings_.skip_ops.insert(*op);
    }
  }
  if (out.options_.find("skip_mutable_buffer") != nullptr) {
    STATICLM_ASSIGN_OR_RETURN(out.settings_.skip_mutable_buffer, out.options_.get_bool("skip_mutable_buffer"));
  }
  return out;
}

namespace {

// How `node`'s matrices are stored, as the placement report names it: the quantized format
// ("int4_g32") or the dtype of each, distinct ones joined by "+"; "" for a node without matrices.
std::string matrix_format(const Graph& graph, const GraphNode& node) {
  std::vector<std::string> formats;
  const std::vector<size_t> inputs = matrix_inputs(node.op, node.inputs.size(), node.attributes);
  for (size_t m = 0; m < inputs.size(); ++m) {
    const ValueId value = node.inputs[inputs[m]];
    if (value == kNoValue) {
      continue;
    }
    const auto layout = matrix_layout(node.attributes, static_cast<int64_t>(m), graph.spec(value));
    const std::string format = layout.ok() && *layout && (*layout)->is_quantized()
                                   ? WeightFormat::quantized((*layout)->codes, (*layout)->group).name()
                                   : std::string(dtype_name(graph.value(value).dtype));
    if (std::find(formats.begin(), formats.end(), format) == formats.end()) {
      formats.push_back(format);
    }
  }
  return join(formats, "+");
}

// A skip_node_id_set entry: "INDEX" (every method), "METHOD:INDEX", or a node name.
struct NodeIdPattern {
  std::string text;
  std::string method;  // empty: any
  int64_t index = -1;  // -1: match by name
  bool matched = false;

  bool matches(std::string_view method_name, size_t node, std::string_view node_name) const {
    if (index < 0) {
      return !node_name.empty() && node_name == text;
    }
    return (method.empty() || method == method_name) && static_cast<size_t>(index) == node;
  }
};

bool parse_index(std::string_view text, int64_t& out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && error == std::errc() && end == text.data() + text.size() && out >= 0;
}

Result<std::vector<NodeIdPattern>> parse_node_ids(const std::vector<std::string>& ids,
                                                  std::span<const PartitionMethod> methods) {
  std::vector<NodeIdPattern> out;
  for (const std::string& id : ids) {
    NodeIdPattern pattern;
    pattern.text = id;
    const size_t colon = id.find(':');
    if (colon != std::string::npos) {
      pattern.method = id.substr(0, colon);
      const bool known = std::any_of(methods.begin(), methods.end(),
                                     [&](const PartitionMethod& m) { return m.name == pattern.method; });
      if (!known || !parse_index(std::string_view(id).substr(colon + 1), pattern.index)) {
        return invalid_argument("option 'skip_node_id_set': '", id,
                                "' is not METHOD:INDEX with a method of this program and a node index");
      }
    } else if (!parse_index(id, pattern.index)) {
      pattern.index = -1;
    }
    out.push_back(std::move(pattern));
  }
  return out;
}

// Per method: where each node goes before lowering.
struct MethodTags {
  std::vector<bool> tagged;
  std::vector<std::string> reasons;
};

std::string node_label(const PartitionMethod& method, size_t n) {
  const GraphNode& node = method.graph->nodes()[n];
  return str_cat("method '", method.name, "' ", describe_node(n, node.op, node.name));
}

// The method graph's value for each constant it reads.
std::map<ConstantId, ValueId> constant_values(const Graph& graph) {
  std::map<ConstantId, ValueId> out;
  for (size_t v = 0; v < graph.num_values(); ++v) {
    const GraphValue& value = graph.value(static_cast<ValueId>(v));
    if (value.kind == ValueKind::kConstant) {
      out.emplace(value.constant, static_cast<ValueId>(v));
    }
  }
  return out;
}

Status check_payload(const DelegatePayload& payload, const ExtractedPartition& partition, const std::string& what) {
  if (payload.blob == nullptr) {
    return internal_error(what, ": preprocess returned no blob");
  }
  const size_t outputs = partition.outputs.size();
  if (!payload.output_order.empty()) {
    std::vector<bool> seen(outputs, false);
    if (payload.output_order.size() != outputs) {
      return internal_error(what, ": output_order has ", payload.output_order.size(), " entries for ", outputs,
                            " outputs");
    }
    for (uint32_t position : payload.output_order) {
      if (position >= outputs || seen[position]) {
        return internal_error(what, ": output_order is not a permutation of [0, ", outputs, ")");
      }
      seen[position] = true;
    }
  }
  const std::map<ConstantId, ValueId> used = constant_values(*partition.graph);
  std::vector<ConstantId> sorted = payload.runtime_constants;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return internal_error(what, ": a runtime constant is listed twice");
  }
  for (ConstantId id : payload.runtime_constants) {
    if (used.count(id) == 0) {
      return internal_error(what, ": runtime constant ", id, " is not read by the partition");
    }
  }
  return ok_status();
}

// Tags every node of every method, recording why each untagged one stays on the portable
// kernels. Fails when a skip_node_id_set entry matches no node.
Result<std::vector<MethodTags>> tag_nodes(const Backend& backend, const ResolvedOptions& options,
                                          const PartitionerSettings& settings,
                                          std::span<const PartitionMethod> methods) {
  STATICLM_ASSIGN_OR_RETURN(std::vector<NodeIdPattern> skip_ids, parse_node_ids(settings.skip_node_ids, methods));
  std::vector<MethodTags> tags(methods.size());
  for (size_t m = 0; m < methods.size(); ++m) {
    const Graph& graph = *methods[m].graph;
    MethodTags& method_tags = tags[m];
    method_tags.tagged.assign(graph.nodes().size(), false);
    method_tags.reasons.resize(graph.nodes().size());
    for (size_t n = 0; n < graph.nodes().size(); ++n) {
      const GraphNode& node = graph.nodes()[n];
      std::string& reason = method_tags.reasons[n];
      for (NodeIdPattern& pattern : skip_ids) {
        if (pattern.matches(methods[m].name, n, node.name)) {
          pattern.matched = true;
          if (reason.empty()) {
            reason = str_cat("skip_node_id_set has '", pattern.text, "'");
          }
        }
      }
      if (!reason.empty()) {
        continue;
      }
      if (settings.skip_ops.count(node.op) != 0) {
        reason = str_cat("skip_node_op_set has '", op_name(node.op), "'");
      } else if (settings.skip_mutable_buffer && !in_place_updates(node.op, node.attributes).empty()) {
        reason = "skip_mutable_buffer: it updates a buffer in place";
      } else if (NodeSupport support = backend.supports(graph, n, options); !support.supported) {
        reason = str_cat(backend.id(), " does not take it: ", support.reason.empty() ? "unsupported" : support.reason);
      } else {
        method_tags.tagged[n] = true;
      }
    }
  }
  for (const NodeIdPattern& pattern : skip_ids) {
    if (!pattern.matched) {
      return invalid_argument("option 'skip_node_id_set': '", pattern.text,
                              "' matches no node (entries are INDEX, METHOD:INDEX or a node name; node indices are "
                              "those after the backend's passes, as `staticlm inspect` shows them)");
    }
  }
  return tags;
}

Status check_no_fallback(std::span<const PartitionMethod> methods, const std::vector<MethodTags>& tags) {
  std::vector<std::string> left;
  for (size_t m = 0; m < methods.size(); ++m) {
    for (size_t n = 0; n < tags[m].tagged.size(); ++n) {
      if (!tags[m].tagged[n]) {
        left.push_back(str_cat(node_label(methods[m], n), ": ", tags[m].reasons[n]));
      }
    }
  }
  if (left.empty()) {
    return ok_status();
  }
  const size_t shown = std::min<size_t>(left.size(), 3);
  return failed_precondition("fallback is disabled (no-fallback) but ", left.size(),
                             left.size() == 1 ? " node stays" : " nodes stay",
                             " on the portable kernels: ", join(std::span(left).first(shown), "; "),
                             left.size() > shown ? str_cat("; and ", left.size() - shown, " more") : "");
}

// The program's named data, gathered from every partition's payload: one entry per key.
class NamedDataCollector {
 public:
  Status add(std::vector<NamedDataSpec> entries, const std::string& what) {
    for (NamedDataSpec& entry : entries) {
      if (entry.source == nullptr || entry.key.empty()) {
        return internal_error(what, ": named data without a key or bytes");
      }
      auto it = index_.find(entry.key);
      if (it == index_.end()) {
        index_.emplace(entry.key, entries_.size());
        entries_.push_back(std::move(entry));
        continue;
      }
      const uint64_t stored = entries_[it->second].source->size_bytes();
      if (stored != entry.source->size_bytes()) {
        return internal_error(what, ": named data '", entry.key, "' is ", entry.source->size_bytes(),
                              " bytes, but another partition stored ", stored, " under that key");
      }
    }
    return ok_status();
  }
  std::vector<NamedDataSpec> take() { return std::move(entries_); }

 private:
  std::map<std::string, size_t, std::less<>> index_;
  std::vector<NamedDataSpec> entries_;
};

// Forms one method's partitions, preprocesses each into a delegate (appended to `delegates`)
// and schedules the method's steps; fills its placement.
Result<ScheduledMethod> partition_method(const Backend& backend, const ResolvedOptions& options,
                                         const std::string& settings_json, const PartitionMethod& method,
                                         const MethodTags& tags, std::vector<DelegateSpec>& delegates,
                                         NamedDataCollector& named_data, MethodPlacement& placement) {
  const Graph& graph = *method.graph;
  const NodeDependencies dependencies = node_dependencies(graph);
  const Partitioning partitioning = form_partitions(dependencies, tags.tagged);
  const std::vector<ValueId> root = alias_roots(graph);
  const std::map<ConstantId, ValueId> constants = constant_values(graph);

  std::vector<std::vector<int32_t>> members(static_cast<size_t>(partitioning.count));
  for (size_t n = 0; n < partitioning.partition_of.size(); ++n) {
    if (partitioning.partition_of[n] >= 0) {
      members[static_cast<size_t>(partitioning.partition_of[n])].push_back(static_cast<int32_t>(n));
    }
  }
  std::vector<ScheduleStep> partition_steps(members.size());
  std::vector<uint32_t> partition_delegate(members.size());
  for (size_t p = 0; p < members.size(); ++p) {
    const std::string what = str_cat("backend '", backend.id(), "' method '", method.name, "' partition ", p);
    auto extracted = extract_partition(graph, members[p], root);
    if (!extracted.ok()) {
      return extracted.status().with_context(what);
    }
    PartitionSubgraph subgraph{method.name, p, extracted->graph.get(), members[p]};
    auto payload = backend.preprocess(subgraph, options);
    if (!payload.ok()) {
      return payload.status().with_context(what);
    }
    STATICLM_RETURN_IF_ERROR(check_payload(*payload, *extracted, what));
    STATICLM_RETURN_IF_ERROR(named_data.add(std::move(payload->named_data), what));
    ScheduleStep& step = partition_steps[p];
    partition_delegate[p] = static_cast<uint32_t>(delegates.size());
    step.inputs = extracted->inputs;
    for (ConstantId id : payload->runtime_constants) {
      step.inputs.push_back(constants.at(id));
    }
    step.outputs = extracted->outputs;

    DelegateSpec delegate;
    delegate.backend_id = std::string(backend.id());
    delegate.compile_specs = std::move(payload->compile_specs);
    delegate.compile_specs.push_back(
        {std::string(kEffectiveSettingsSpecKey), std::vector<uint8_t>(settings_json.begin(), settings_json.end())});
    delegate.blob = std::move(payload->blob);
    delegate.output_order = std::move(payload->output_order);
    delegates.push_back(std::move(delegate));
  }

  placement.method = method.name;
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    const GraphNode& node = graph.nodes()[n];
    const int32_t p = partitioning.partition_of[n];
    placement.nodes.push_back({static_cast<int32_t>(n), std::string(op_name(node.op)), node.name,
                               p >= 0 ? static_cast<int32_t>(partition_delegate[static_cast<size_t>(p)]) : -1,
                               p >= 0 ? std::string() : tags.reasons[n], matrix_format(graph, node)});
  }
  ScheduledMethod scheduled;
  scheduled.name = method.name;
  scheduled.graph = method.graph;
  for (const ScheduledGroup& group : schedule_groups(dependencies, partitioning)) {
    if (group.partition >= 0) {
      scheduled.steps.push_back(partition_steps[static_cast<size_t>(group.partition)]);
      scheduled.step_delegate.push_back(partition_delegate[static_cast<size_t>(group.partition)]);
      placement.delegates.push_back(scheduled.step_delegate.back());
    } else {
      ScheduleStep step;
      step.node = group.node;
      scheduled.steps.push_back(std::move(step));
      scheduled.step_delegate.push_back(0);
    }
  }
  return scheduled;
}

}  // namespace

Result<PartitionedProgram> Partitioner::run(std::span<const PartitionMethod> methods, const LowerOptions& lower,
                                            const PartitionRunOptions& run_options) const {
  const Backend& backend = *backend_;
  for (const PartitionMethod& method : methods) {
    PassManager passes;
    for (std::unique_ptr<GraphPass>& pass : backend.passes(options_)) {
      passes.add(std::move(pass));
    }
    Status passed = passes.run(*method.graph);
    if (!passed.ok()) {
      return passed.with_context(str_cat("backend '", backend.id(), "' passes on method '", method.name, "'"));
    }
  }
  STATICLM_ASSIGN_OR_RETURN(std::vector<MethodTags> tags, tag_nodes(backend, options_, settings_, methods));
  if (run_options.no_fallback) {
    STATICLM_RETURN_IF_ERROR(check_no_fallback(methods, tags));
  }

  PartitionedProgram out;
  out.report.backend = std::string(backend.id());
  out.report.settings_json = options_.to_json();
  std::vector<DelegateSpec> delegates;
  NamedDataCollector named_data;
  std::vector<ScheduledMethod> scheduled;
  for (size_t m = 0; m < methods.size(); ++m) {
    MethodPlacement placement;
    STATICLM_ASSIGN_OR_RETURN(ScheduledMethod method,
                              partition_method(backend, options_, out.report.settings_json, methods[m], tags[m],
                                               delegates, named_data, placement));
    scheduled.push_back(std::move(method));
    out.report.methods.push_back(std::move(placement));
  }
  LowerOptions with_report = lower;
  with_report.metadata.push_back({std::string(kPlacementMetadataKey), out.report.to_json()});
  STATICLM_ASSIGN_OR_RETURN(out.spec, lower_program(scheduled, std::move(delegates), named_data.take(), with_report));
  return out;
}

}  // namespace staticlm
