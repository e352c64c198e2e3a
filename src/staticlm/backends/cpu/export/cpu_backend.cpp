// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/cpu/export/cpu_backend.h"

#include "staticlm/backends/cpu/export/epilogue_fusion.h"
#include "staticlm/backends/cpu/export/matrix_formats.h"
#include "staticlm/backends/cpu/export/multi_linear_fusion.h"
#include "staticlm/backends/cpu/export/pack_weights_pass.h"
#include "staticlm/backends/cpu/export/qkv_rope_cache_fusion.h"
#include "staticlm/backends/cpu/export/swiglu_fusion.h"
#include "staticlm/backends/cpu/export/weight_dtype_pass.h"
#include "staticlm/format/method_blob.h"
#include "staticlm/lowering/lower_program.h"
#include "staticlm/ops/weight_format.h"

namespace staticlm {
namespace {

// The id both sides share (runtime/cpu_runtime.h has the same).
constexpr std::string_view kId = "cpu";
// The route of the options the backend's own passes consume.
constexpr std::string_view kRouteCpu = "cpu";
constexpr int64_t kDefaultGroupSize = 32;

// Stands in for the passes when the options name no format the passes can store (a group size
// the schema's range lets through, such as 48): the export fails with its reason.
class RefusedOptionsPass final : public GraphPass {
 public:
  explicit RefusedOptionsPass(Status status) : status_(std::move(status)) {}
  std::string_view name() const override { return "cpu_options"; }
  Status run(Graph&) override { return status_; }

 private:
  Status status_;
};

// The formats a matrix option offers: `first` (its default), as_exported where that is not it,
// then the float dtypes and the quantized codes.
std::vector<AllowedValue> matrix_format_values(AllowedValue first) {
  std::vector<AllowedValue> values = {std::move(first)};
  if (values[0].name != kKeepWeightDtype) {
    values.push_back({std::string(kKeepWeightDtype), "the dtype the exporter wrote", std::nullopt});
  }
  values.push_back({"f32", "", std::nullopt});
  values.push_back({"f16", "f16 storage, f32 arithmetic", std::nullopt});
  values.push_back(
      {"bf16",
       "bf16 storage; prefill multiplies bf16 pairs (vdpbf16ps; bfdot / bfmmla on AArch64) where the CPU has them",
       std::nullopt});
  values.push_back({"int8", "int8 codes, one f16 scale per group_size weights (q8_0's bits at 32)", std::nullopt});
  values.push_back({"int4", "int4 codes, one f16 scale per group_size weights (q4_0's bits at 32)", std::nullopt});
  return values;
}

}  // namespace

std::string cpu_named_data_key(std::string_view constant_name) {
  return str_cat("cpu/", constant_name);
}

Result<DelegatePayload> lower_cpu_partition(const PartitionSubgraph& partition,
                                            std::span<const uint32_t> output_order) {
  const Graph& graph = *partition.graph;
  DelegatePayload payload;
  for (size_t v = 0; v < graph.num_values(); ++v) {
    const GraphValue& value = graph.value(static_cast<ValueId>(v));
    if (value.kind == ValueKind::kConstant) {
      const ConstantEntry& constant = graph.constants().at(value.constant);
      payload.named_data.push_back({cpu_named_data_key(constant.name), constant.source, 64});
    }
  }
  ScheduledMethod method{
      str_cat(partition.method, ".partition_", partition.index), &graph, one_step_per_node(graph), {}};
  MethodLoweringOptions lowering;
  lowering.constants.named_data_key = [&graph](ConstantId id) {
    return cpu_named_data_key(graph.constants().at(id).name);
  };
  lowering.output_order.assign(output_order.begin(), output_order.end());
  STATICLM_ASSIGN_OR_RETURN(MethodSpec spec, lower_method(method, lowering));
  STATICLM_ASSIGN_OR_RETURN(std::vector<uint8_t> blob, write_method_blob(spec));
  payload.blob = make_owned_source(std::move(blob));
  payload.output_order = lowering.output_order;
  return payload;
}

Result<std::shared_ptr<CpuBackend>> CpuBackend::create() {
  std::shared_ptr<CpuBackend> backend(new CpuBackend());
  backend->schema_.backend_id = std::string(kId);
  backend->schema_.options.push_back(
      enum_option("weight_dtype", std::string(kKeepWeightDtype),
                  matrix_format_values({std::string(kKeepWeightDtype),
                                        "the dtype the exporter wrote (staticlm export --dtype)", std::nullopt}),
                  kRouteCpu, {}, "dtype of the linear and embedding matrices the backend stores"));
  backend->schema_.options.push_back(
      enum_option("lm_head_dtype", std::string(kFollowWeightDtype),
                  matrix_format_values({std::string(kFollowWeightDtype), "as weight_dtype", std::nullopt}), kRouteCpu,
                  {}, "dtype of the output head (the linear the logits come from), and of a table tied to it"));
  backend->schema_.options.push_back(enum_option(
      "embedding_dtype", std::string(kFollowWeightDtype),
      matrix_format_values({std::string(kFollowWeightDtype),
                            "as a float weight_dtype; as exported under int8 / int4 (a gather reads one row)",
                            std::nullopt}),
      kRouteCpu, {}, "dtype of an untied embedding table (a tied one is the lm_head's)"));
  OptionSpec group_size =
      int_option("group_size", kDefaultGroupSize, 16, 128, kRouteCpu, {},
                 "weights per quantization scale along K: 16, 32, 64 or 128 (weight_dtype int8 / int4)");
  group_size.int_values = {16, 32, 64, 128};  // the block sizes the int8 / int4 kernels are written for
  group_size.constraints.push_back(
      {OptionConstraint::Kind::kRequires, {}, "weight_dtype", {"int8", "int4"}, "only quantized weights have groups"});
  backend->schema_.options.push_back(std::move(group_size));
  for (OptionSpec& spec : partitioner_option_specs()) {
    backend->schema_.options.push_back(std::move(spec));
  }
  return backend;
}

std::string_view CpuBackend::id() const {
  return kId;
}

std::string_view CpuBackend::summary() const {
  return "the host CPU: every op of the LLM op set; weights stored once as named data, kernels chosen by ISA";
}

std::optional<std::string> CpuBackend::stored_weight_format(const ResolvedOptions& options) const {
  // The passes refuse what does not parse, so the export fails before this is recorded.
  const Result<MatrixFormats> formats = MatrixFormats::from_options(options);
  if (!formats.ok() || (!formats->body().dtype && !formats->body().quantized())) {
    return std::nullopt;
  }
  return formats->body().name();
}

std::vector<std::unique_ptr<GraphPass>> CpuBackend::passes(const ResolvedOptions& options) const {
  std::vector<std::unique_ptr<GraphPass>> passes;
  const Result<MatrixFormats> formats = MatrixFormats::from_options(options);
  if (!formats.ok()) {
    passes.push_back(std::make_unique<RefusedOptionsPass>(formats.status()));
    return passes;
  }
  // Float conversions first; quantized formats are pack_weights' work, from whatever float dtype
  // the exporter wrote.
  passes.push_back(std::make_unique<WeightDtypePass>(*formats));
  // The fusions after weight_dtype, which rewrites the weights of linear nodes only.
  passes.push_back(std::make_unique<SwigluFusion>());
  // Before multi_linear_fusion, which would otherwise merge gate and up.
  passes.push_back(std::make_unique<SwigluLinearFusion>());
  passes.push_back(std::make_unique<LinearAddFusion>());
  passes.push_back(std::make_unique<MultiLinearFusion>());
  // After multi_linear_fusion: it takes the q / k / v multi_linear with its rope and cache writes.
  passes.push_back(std::make_unique<QkvRopeCacheFusion>());
  // Last: it packs the weights the passes above chose, for the nodes they left.
  passes.push_back(std::make_unique<PackWeightsPass>(*formats));
  return passes;
}

NodeSupport CpuBackend::supports(const Graph& graph, size_t node, const ResolvedOptions& options) const {
  (void)graph;
  (void)node;
  (void)options;
  return NodeSupport::yes();
}

Result<DelegatePayload> CpuBackend::preprocess(const PartitionSubgraph& partition,
                                               const ResolvedOptions& options) const {
  (void)options;
  return lower_cpu_partition(partition);
}

Status register_cpu_backend(BackendRegistry& registry) {
  STATICLM_ASSIGN_OR_RETURN(std::shared_ptr<CpuBackend> backend, CpuBackend::create());
  return registry.add(std::move(backend));
}

}  // namespace staticlm
