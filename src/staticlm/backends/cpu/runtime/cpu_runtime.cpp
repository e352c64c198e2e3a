// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/cpu/runtime/cpu_runtime.h"

#include "staticlm/backends/cpu/kernels/machine_peaks.h"
#include "staticlm/backends/cpu/kernels/register.h"
#include "staticlm/format/method_blob.h"
#include "staticlm/format/method_reader.h"
#include "staticlm/runtime/method_session.h"

namespace staticlm {
namespace {

class CpuDelegateInstance final : public DelegateInstance {
 public:
  explicit CpuDelegateInstance(std::unique_ptr<MethodSession> session) : session_(std::move(session)) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) override {
    return session_->execute_with(inputs, outputs, context);
  }

 private:
  std::unique_ptr<MethodSession> session_;
};

class CpuDelegate final : public DelegateHandle {
 public:
  CpuDelegate(std::unique_ptr<PreparedMethod> method, std::vector<TensorSpec> outputs, std::vector<uint32_t> updated)
      : method_(std::move(method)), output_specs_(std::move(outputs)), updated_inputs_(std::move(updated)) {}

  std::span<const TensorSpec> output_specs() const override { return output_specs_; }
  std::span<const uint32_t> updated_inputs() const override { return updated_inputs_; }
  std::optional<KernelReport> kernel_report() const override { return method_->kernel_report(); }
  Result<std::unique_ptr<DelegateInstance>> new_instance() const override {
    // The program that owns this delegate outlives every session of it; execute_with passes the
    // caller's thread pool.
    STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<MethodSession> session, method_->new_session(nullptr, nullptr));
    return std::unique_ptr<DelegateInstance>(std::make_unique<CpuDelegateInstance>(std::move(session)));
  }

 private:
  std::unique_ptr<PreparedMethod> method_;
  std::vector<TensorSpec> output_specs_;
  std::vector<uint32_t> updated_inputs_;
};

// This architecture's caps (core/cpu_features.h), the host's features and the native kernels this
// build has in the docs: `staticlm backends cpu` shows what this machine can choose from.
std::vector<OptionSpec> runtime_option_specs() {
  std::vector<AllowedValue> isa_values;
  for (const IsaCap& cap : isa_caps()) {
    isa_values.push_back(
        {std::string(cap.name),
         cap.name == "auto" ? str_cat(cap.doc, ": ", CpuFeatures::host().to_string()) : std::string(cap.doc),
         std::nullopt});
  }
  std::string paths;
  for (const CpuKernelPath& path : cpu_kernel_paths()) {
    paths += str_cat(paths.empty() ? "" : ", ", path.isa);
  }
  const std::string built = paths.empty() ? str_cat("this build has no native kernels (", cpu_kernel_arch(),
                                                    "): every op runs on the portable ones")
                                          : str_cat("this build's native kernels: ", cpu_kernel_arch(), " ", paths);
  return {
      enum_option("isa", "auto", std::move(isa_values), "runtime", {},
                  str_cat("the widest instruction set the cpu backend's kernels may use (", built, ")")),
      enum_option("bf16_gemm", "auto",
                  {{"auto",
                    "AMX tiles where the CPU has them, else pairs where a probe at load finds vdpbf16ps faster "
                    "than f32 multiply-adds (on AArch64: bfdot / bfmmla wherever the CPU has bf16)",
                    std::nullopt},
                   {"pairs",
                    "multiply bf16 pairs with vdpbf16ps (bfdot / bfmmla on AArch64; x rounded to bf16), never AMX "
                    "tiles",
                    std::nullopt},
                   {"widen", "widen the weights to f32 and multiply in f32", std::nullopt}},
                  "runtime", {},
                  "how a chunk's GEMM multiplies bf16 weights on a CPU with AVX-512 BF16 (on AArch64 with bf16: every "
                  "call's)")};
}

// Whether vdpbf16ps outruns f32 multiply-adds enough to pay for rounding x: on some CPUs with
// AVX-512 BF16 it does, on others the pair GEMM prefills slower than the f32 one (`staticlm bench`
// with `--runtime-option cpu.bf16_gemm=pairs` against `widen`). Probed once per process.
bool pair_gemm_wins() {
  static const bool wins = cpu::bf16_dot_speedup(3) >= 1.25;
  return wins;
}

// The blob's inputs must be the call's, one to one.
Status check_call_inputs(const PreparedMethod& method, std::span<const TensorSpec> call_inputs) {
  if (method.inputs().size() != call_inputs.size()) {
    return invalid_argument("the blob has ", method.inputs().size(), " inputs, the call passes ", call_inputs.size());
  }
  for (size_t i = 0; i < call_inputs.size(); ++i) {
    const IoTensorInfo& input = method.inputs()[i];
    if (input.dtype != call_inputs[i].dtype || input.shape != call_inputs[i].shape) {
      return invalid_argument("blob input ", i, " '", input.name, "' is ", dtype_name(input.dtype),
                              shape_string(input.shape), ", the call passes ", dtype_name(call_inputs[i].dtype),
                              shape_string(call_inputs[i].shape));
    }
  }
  return ok_status();
}

}  // namespace

Result<std::shared_ptr<CpuBackendRuntime>> CpuBackendRuntime::create(std::string id) {
  std::shared_ptr<CpuBackendRuntime> runtime(new CpuBackendRuntime(std::move(id)));
  runtime->options_.backend_id = runtime->id_;
  runtime->options_.options = runtime_option_specs();
  STATICLM_RETURN_IF_ERROR(register_cpu_kernels(runtime->kernels_));
  return runtime;
}

Result<std::unique_ptr<DelegateHandle>> CpuBackendRuntime::init(const DelegateInit& init) const {
  STATICLM_ASSIGN_OR_RETURN(const fb::Method* blob, read_method_blob(init.blob));
  STATICLM_ASSIGN_OR_RETURN(MethodSpec spec, read_method_spec(*blob));
  STATICLM_ASSIGN_OR_RETURN(std::string isa, init.options->get_string("isa"));
  PrepareContext context;
  context.label = "cpu delegate";
  context.kernels = &kernels_;
  STATICLM_ASSIGN_OR_RETURN(context.allowed_features, cpu_features_for_isa(isa));
  STATICLM_ASSIGN_OR_RETURN(std::string bf16_gemm, init.options->get_string("bf16_gemm"));
  // AMX tiles multiply 16 x 32 by 32 x 16 bf16 per instruction, far past either alternative, so
  // auto takes them where the CPU has them (and the isa cap allows); otherwise the probe decides.
  const bool tiles = context.allowed_features.has(CpuFeature::kAmxBf16);
  if (bf16_gemm == "widen") {
    // The bf16 GEMMs (pairs and tiles, and AArch64's bf16 linears) are the only kernels that need
    // the features.
    context.allowed_features = context.allowed_features.without(CpuFeature::kAvx512Bf16)
                                   .without(CpuFeature::kAmxBf16)
                                   .without(CpuFeature::kNeonBf16);
  } else if (bf16_gemm == "auto" && !tiles && !pair_gemm_wins()) {
    // The probe measures vdpbf16ps; AArch64's bfdot / bfmmla run wherever the CPU has them (their
    // speed against fmla is not measured: no AArch64 machine has run them).
    context.allowed_features = context.allowed_features.without(CpuFeature::kAvx512Bf16).without(CpuFeature::kAmxBf16);
  } else if (bf16_gemm == "pairs") {
    context.allowed_features = context.allowed_features.without(CpuFeature::kAmxBf16);
  }
  context.named_data = init.named_data;
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<PreparedMethod> method, PreparedMethod::prepare(std::move(spec), context));
  STATICLM_RETURN_IF_ERROR(check_call_inputs(*method, init.inputs).with_context("cpu delegate"));
  std::vector<TensorSpec> outputs;
  for (const IoTensorInfo& output : method->outputs()) {
    outputs.push_back({output.dtype, output.shape});
  }
  std::vector<uint32_t> updated;
  for (size_t i = 0; i < method->inputs().size(); ++i) {
    if (method->inputs()[i].is_mutable) {
      updated.push_back(static_cast<uint32_t>(i));
    }
  }
  return std::unique_ptr<DelegateHandle>(
      std::make_unique<CpuDelegate>(std::move(method), std::move(outputs), std::move(updated)));
}

Status register_cpu_backend_runtime(BackendRuntimeRegistry& registry) {
  STATICLM_ASSIGN_OR_RETURN(std::shared_ptr<CpuBackendRuntime> runtime, CpuBackendRuntime::create());
  return registry.add(std::move(runtime));
}

}  // namespace staticlm
