// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/cpu/export/matrix_formats.h"

#include "staticlm/core/float_convert.h"
#include "staticlm/ops/weight_format.h"

namespace staticlm {
namespace {

constexpr int64_t kDefaultGroup = 32;

// The option's value, or `fallback` where the schema has no such option.
std::string value_or(const ResolvedOptions& options, std::string_view name, std::string_view fallback) {
  return options.get_string(name).value_or(std::string(fallback));
}

bool given(const ResolvedOptions& options, std::string_view name) {
  const EffectiveOption* option = options.find(name);
  return option != nullptr && option->given;
}

// Whether a graph output is `value`.
bool is_graph_output(const Graph& graph, ValueId value) {
  for (const GraphOutput& output : graph.outputs()) {
    if (output.value == value) {
      return true;
    }
  }
  return false;
}

// A linear whose output the graph returns: the output head.
bool is_head(const Graph& graph, const GraphNode& node) {
  return node.op == OpKind::kLinear && node.outputs.size() == 1 && is_graph_output(graph, node.outputs[0]);
}

}  // namespace

std::string MatrixFormat::name() const {
  if (quantized()) {
    return WeightFormat::quantized(codes, group).name();
  }
  return dtype ? std::string(dtype_name(*dtype)) : std::string(kKeepWeightDtype);
}

Result<MatrixFormat> MatrixFormat::parse(std::string_view value, int64_t group, std::string_view option) {
  if (value == kKeepWeightDtype) {
    return MatrixFormat{};
  }
  if (value == "int8" || value == "int4") {
    if (!is_quant_group(group)) {
      return invalid_argument("option 'group_size': expected 16, 32, 64 or 128, found ", group);
    }
    return MatrixFormat{std::nullopt, value == "int8" ? PanelCodes::kInt8 : PanelCodes::kInt4, group};
  }
  const Result<DType> dtype = parse_dtype(value);
  if (!dtype.ok() || !is_plain_float(*dtype)) {
    return invalid_argument("option '", option, "': expected ", kKeepWeightDtype,
                            ", f32, f16, bf16, int8 or int4, found '", value, "'");
  }
  return MatrixFormat{*dtype, PanelCodes::kFloat, 0};
}

Result<MatrixFormats> MatrixFormats::from_options(const ResolvedOptions& options) {
  const int64_t group = options.get_int("group_size").value_or(kDefaultGroup);
  STATICLM_ASSIGN_OR_RETURN(
      const MatrixFormat body,
      MatrixFormat::parse(value_or(options, "weight_dtype", kKeepWeightDtype), group, "weight_dtype"));
  MatrixFormat head = body;
  if (const std::string value = value_or(options, "lm_head_dtype", kFollowWeightDtype); value != kFollowWeightDtype) {
    STATICLM_ASSIGN_OR_RETURN(head, MatrixFormat::parse(value, group, "lm_head_dtype"));
  }
  // An untied table follows a float weight_dtype, and stays as exported under a quantized one
  // (a gather reads one row: its size costs the file, not the step).
  MatrixFormat embedding = body.quantized() ? MatrixFormat{} : body;
  if (const std::string value = value_or(options, "embedding_dtype", kFollowWeightDtype); value != kFollowWeightDtype) {
    STATICLM_ASSIGN_OR_RETURN(embedding, MatrixFormat::parse(value, group, "embedding_dtype"));
  }
  return MatrixFormats(body, head, embedding, given(options, "embedding_dtype"));
}

Result<MatrixFormat> MatrixFormats::for_node(const Graph& graph, const GraphNode& node) const {
  if (is_head(graph, node)) {
    return head_;
  }
  if (node.op != OpKind::kEmbedding || node.inputs.empty()) {
    return body_;
  }
  const ValueId table = node.inputs[0];
  if (!tied_to_head(graph, table)) {
    return embedding_;
  }
  if (embedding_given_ && embedding_ != head_) {
    const GraphValue& value = graph.value(table);
    const std::string name =
        value.kind == ValueKind::kConstant ? graph.constants().at(value.constant).name : "the table";
    return invalid_argument("option 'embedding_dtype': '", name,
                            "' is both the embedding table and the lm_head (tied), stored as lm_head_dtype (",
                            head_.name(), "); embedding_dtype asks ", embedding_.name());
  }
  return head_;
}

bool MatrixFormats::tied_to_head(const Graph& graph, ValueId table) {
  for (const GraphNode& other : graph.nodes()) {
    if (is_head(graph, other) && other.inputs.size() >= 2 && other.inputs[1] == table) {
      return true;
    }
  }
  const GraphValue& value = graph.value(table);
  return value.kind == ValueKind::kConstant && graph.constants().at(value.constant).tied_head;
}

}  // namespace staticlm
