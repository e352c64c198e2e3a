#include "staticlm/backends/cpu/cpu_runtime.h"

#include "staticlm/backends/cpu/cpu_blob.h"
#include "staticlm/backends/portable/register.h"
#include "staticlm/core/aligned_buffer.h"

namespace staticlm {
namespace {

class CpuDelegate final : public DelegateHandle {
 public:
  static Result<std::unique_ptr<CpuDelegate>> create(CpuPlan plan, const KernelRegistry& kernels) {
    std::unique_ptr<CpuDelegate> out(new CpuDelegate());
    out->plan_ = std::move(plan);
    STATICLM_ASSIGN_OR_RETURN(out->arena_, AlignedBuffer::allocate(out->plan_.arena_size, out->plan_.arena_alignment));
    for (const CpuValue& value : out->plan_.values) {
      void* data = value.storage == CpuValueStorage::kArena ? out->arena_.data() + value.index : nullptr;
      out->views_.emplace_back(data, value.spec.dtype, value.spec.shape);
    }
    for (size_t n = 0; n < out->plan_.nodes.size(); ++n) {
      const CpuNode& node = out->plan_.nodes[n];
      std::vector<const TensorSpec*> inputs;
      for (int32_t input : node.inputs) {
        inputs.push_back(input < 0 ? nullptr : &out->plan_.values[static_cast<size_t>(input)].spec);
      }
      std::vector<TensorSpec> outputs;
      for (uint32_t output : node.outputs) {
        outputs.push_back(out->plan_.values[output].spec);
      }
      const std::string what = str_cat("cpu delegate node ", n, " (", op_name(node.op), ")");
      const KernelFactory* factory = kernels.find(node.op);
      if (factory == nullptr) {
        return unimplemented(what, ": no portable kernel");
      }
      auto kernel = (*factory)(KernelSignature{node.op, inputs, outputs, node.attributes});
      if (!kernel.ok()) {
        return kernel.status().with_context(what);
      }
      Step step;
      step.kernel = std::move(kernel).value();
      step.inputs.resize(node.inputs.size());
      step.outputs.resize(node.outputs.size());
      out->steps_.push_back(std::move(step));
    }
    return out;
  }

  std::span<const TensorSpec> output_specs() const override { return plan_.output_specs; }
  std::span<const uint32_t> updated_inputs() const override { return plan_.updated_inputs; }

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) override {
    if (outputs.size() != plan_.output_specs.size()) {
      return internal_error("cpu delegate: called with ", outputs.size(), " outputs, it has ",
                            plan_.output_specs.size());
    }
    for (size_t v = 0; v < plan_.values.size(); ++v) {
      const CpuValue& value = plan_.values[v];
      if (value.storage == CpuValueStorage::kInput) {
        if (value.index >= inputs.size()) {
          return internal_error("cpu delegate: called with ", inputs.size(), " inputs, it reads input ", value.index);
        }
        views_[v].set_data(inputs[value.index].raw());
      } else if (value.storage == CpuValueStorage::kOutput) {
        views_[v].set_data(outputs[value.index].raw());
      }
    }
    for (size_t n = 0; n < steps_.size(); ++n) {
      const CpuNode& node = plan_.nodes[n];
      Step& step = steps_[n];
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        step.inputs[i] = node.inputs[i] < 0 ? TensorView() : views_[static_cast<size_t>(node.inputs[i])];
      }
      for (size_t i = 0; i < node.outputs.size(); ++i) {
        step.outputs[i] = views_[node.outputs[i]];
      }
      Status status = step.kernel->execute(step.inputs, step.outputs, context);
      if (!status.ok()) {
        return status.with_context(str_cat("cpu delegate node ", n, " (", op_name(node.op), ")"));
      }
    }
    return ok_status();
  }

 private:
  struct Step {
    std::unique_ptr<Kernel> kernel;
    std::vector<TensorView> inputs;
    std::vector<TensorView> outputs;
  };
  CpuDelegate() = default;

  CpuPlan plan_;
  AlignedBuffer arena_;
  std::vector<TensorView> views_;  // per value; shapes borrow plan_.values
  std::vector<Step> steps_;
};

}  // namespace

Result<std::shared_ptr<CpuBackendRuntime>> CpuBackendRuntime::create(std::string id) {
  std::shared_ptr<CpuBackendRuntime> runtime(new CpuBackendRuntime(std::move(id)));
  STATICLM_RETURN_IF_ERROR(register_portable_kernels(runtime->kernels_));
  return runtime;
}

Result<std::unique_ptr<DelegateHandle>> CpuBackendRuntime::init(const DelegateInit& init) const {
  STATICLM_ASSIGN_OR_RETURN(CpuPlan plan, read_cpu_blob(init.blob, init.inputs));
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<CpuDelegate> delegate, CpuDelegate::create(std::move(plan), kernels_));
  return std::unique_ptr<DelegateHandle>(std::move(delegate));
}

}  // namespace staticlm
