// SPDX-License-Identifier: Apache-2.0
#include "staticlm/runtime/method_session.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "staticlm/runtime/prepared_method_step.h"

namespace staticlm {
namespace {

std::string known_names(std::span<const IoTensorInfo> infos) {
  std::vector<std::string> names;
  for (const IoTensorInfo& info : infos) {
    names.push_back("'" + info.name + "'");
  }
  return names.empty() ? "none" : join(names, ", ");
}

Status check_binding(const IoTensorInfo& info, std::string_view kind, DType dtype, const ExternalBuffer& buffer) {
  if (dtype != info.dtype) {
    return invalid_argument(kind, " '", info.name, "': expected dtype ", dtype_name(info.dtype), ", found ",
                            dtype_name(dtype));
  }
  if (buffer.size != info.nbytes) {
    return invalid_argument(kind, " '", info.name, "': expected ", info.nbytes, " bytes (", dtype_name(info.dtype),
                            shape_string(info.shape), "), found ", buffer.size);
  }
  if (buffer.data == nullptr && buffer.size > 0) {
    return invalid_argument(kind, " '", info.name, "': null data pointer");
  }
  return ok_status();
}

}  // namespace

MethodSession::~MethodSession() = default;

Status MethodSession::bind(bool input, std::string_view name, DType dtype, const ExternalBuffer& buffer) {
  const PreparedMethod& m = *method_;
  const std::string_view kind = input ? "input" : "output";
  const int index = input ? m.input_index(name) : m.output_index(name);
  if (index < 0) {
    return not_found("method '", m.name(), "' has no ", kind, " '", name, "' (", kind,
                     "s: ", known_names(input ? m.inputs() : m.outputs()), ")");
  }
  const auto i = static_cast<size_t>(index);
  const IoTensorInfo& info = input ? m.inputs_[i] : m.outputs_[i];
  STATICLM_RETURN_IF_ERROR(check_binding(info, kind, dtype, buffer));
  std::vector<ExternalBuffer>& buffers = input ? input_buffers_ : output_buffers_;
  buffers[i] = buffer;
  values_[input ? m.input_values_[i] : m.output_values_[i]].set_data(buffer.data);
  (input ? input_bound_ : output_bound_)[i] = true;
  for (const PreparedMethod::IoUse& use : input ? m.input_uses_[i] : m.output_uses_[i]) {
    DelegateBufferBinding binding{use.role, use.position, info.name, TensorSpec{info.dtype, info.shape}, &buffers[i]};
    Status bound = delegates_[use.step]->bind_buffer(binding);
    if (!bound.ok()) {
      return bound.with_context(
          str_cat("method '", m.name(), "' ", m.steps_[use.step].label, " binding ", kind, " '", info.name, "'"));
    }
  }
  return ok_status();
}

Status MethodSession::bind_input(std::string_view name, DType dtype, const ExternalBuffer& buffer) {
  return bind(true, name, dtype, buffer);
}
Status MethodSession::bind_output(std::string_view name, DType dtype, const ExternalBuffer& buffer) {
  return bind(false, name, dtype, buffer);
}
Status MethodSession::bind_input(std::string_view name, DType dtype, void* data, uint64_t nbytes) {
  return bind(true, name, dtype, ExternalBuffer::host(data, nbytes));
}
Status MethodSession::bind_output(std::string_view name, DType dtype, void* data, uint64_t nbytes) {
  return bind(false, name, dtype, ExternalBuffer::host(data, nbytes));
}
Status MethodSession::bind_input(std::string_view name, Tensor& tensor) {
  return bind_input(name, tensor.dtype(), tensor.bytes().data(), tensor.nbytes());
}
Status MethodSession::bind_output(std::string_view name, Tensor& tensor) {
  return bind_output(name, tensor.dtype(), tensor.bytes().data(), tensor.nbytes());
}

Status MethodSession::check_bound() const {
  const PreparedMethod& m = *method_;
  for (size_t i = 0; i < input_bound_.size(); ++i) {
    if (!input_bound_[i]) {
      return failed_precondition("method '", m.name(), "': input '", m.inputs_[i].name, "' is not bound");
    }
  }
  for (size_t i = 0; i < output_bound_.size(); ++i) {
    if (!output_bound_[i]) {
      return failed_precondition("method '", m.name(), "': output '", m.outputs_[i].name, "' is not bound");
    }
  }
  return ok_status();
}

Status MethodSession::execute() {
  STATICLM_RETURN_IF_ERROR(check_bound());
  KernelContext context{pool_};
  context.op_profile = op_profile_;
  return run(context, nullptr);
}

Status MethodSession::execute(std::span<const RowNeed> needs) {
  if (needs.size() != method_->outputs_.size()) {
    return invalid_argument("method '", method_->name(), "': expected a need per output (", method_->outputs_.size(),
                            "), found ", needs.size());
  }
  STATICLM_RETURN_IF_ERROR(check_bound());
  KernelContext context{pool_};
  context.op_profile = op_profile_;
  return run(context, &plan_for(needs));
}

const PreparedMethod::RunPlan& MethodSession::plan_for(std::span<const RowNeed> needs) {
  if (!planned_ || !std::equal(needs.begin(), needs.end(), planned_for_.begin(), planned_for_.end())) {
    method_->plan_run(needs, plan_);
    planned_for_.assign(needs.begin(), needs.end());
    planned_ = true;
  }
  return plan_;
}

Status MethodSession::execute_with(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                                   const KernelContext& context) {
  const PreparedMethod& m = *method_;
  if (inputs.size() != m.input_values_.size() || outputs.size() != m.output_values_.size()) {
    return internal_error(m.label_, ": called with ", inputs.size(), " inputs and ", outputs.size(),
                          " outputs, it has ", m.input_values_.size(), " and ", m.output_values_.size());
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    values_[m.input_values_[i]].set_data(inputs[i].raw());
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    values_[m.output_values_[i]].set_data(outputs[i].raw());
  }
  const std::span<const RowNeed> needs = context.output_needs;
  if (needs.size() != outputs.size() ||
      std::all_of(needs.begin(), needs.end(), [](RowNeed need) { return need == RowNeed::kAll; })) {
    return run(context, nullptr);
  }
  return run(context, &plan_for(needs));
}

namespace {

// Leading entries below zero: a left-padded chunk's padding rows.
int64_t leading_padding(const TensorView& positions, int64_t rows) {
  int64_t padding = 0;
  if (positions.dtype() == DType::kI64) {
    const int64_t* p = positions.data<int64_t>();
    while (padding < rows && p[padding] < 0) ++padding;
  } else {
    const int32_t* p = positions.data<int32_t>();
    while (padding < rows && p[padding] < 0) ++padding;
  }
  return padding;
}

}  // namespace

Status MethodSession::run(const KernelContext& outer_context, const PreparedMethod::RunPlan* plan) {
  const PreparedMethod& m = *method_;
  // A method that reads the chunk's positions says how many of its rows are padding; one that
  // does not (a delegate of linears only) runs inside a call that did, and keeps what it said.
  KernelContext context = outer_context;
  if (m.row_positions_value_ >= 0) {
    context.chunk_rows = m.chunk_rows_;
    context.padding_rows = leading_padding(values_[static_cast<size_t>(m.row_positions_value_)], m.chunk_rows_);
  }
  // The chunk's real rows, which the profile counts a step's time under whatever it computes.
  const int64_t real_rows = context.chunk_rows - context.padding_rows;
  const int64_t padding_rows = context.padding_rows;
  for (size_t s = 0; s < m.steps_.size(); ++s) {
    const RowNeed need = plan != nullptr ? plan->steps[s] : RowNeed::kAll;
    if (need == RowNeed::kNone) {
      continue;
    }
    // The last row alone: every row before it is padding to the kernel (the chunk's last row is
    // always a real one). The caller's output needs were this method's; a delegate call here gets
    // its own.
    context.padding_rows = need == RowNeed::kLastRow && context.chunk_rows > 1 ? context.chunk_rows - 1 : padding_rows;
    context.output_needs = plan != nullptr ? std::span<const RowNeed>(plan->outputs[s]) : std::span<const RowNeed>();
    const PreparedMethod::Step& step = m.steps_[s];
    std::vector<TensorView>& inputs = step_inputs_[s];
    std::vector<TensorView>& outputs = step_outputs_[s];
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      inputs[i] = step.inputs[i] < 0 ? TensorView() : values_[static_cast<size_t>(step.inputs[i])];
    }
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      outputs[i] = values_[step.outputs[i]];
    }
    const auto start =
        context.op_profile != nullptr ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    Status status =
        step.kernel ? step.kernel->execute(inputs, outputs, context) : delegates_[s]->execute(inputs, outputs, context);
    if (context.op_profile != nullptr && step.kernel) {
      // A delegate call is not timed here: the delegate's kernels are, through the context.
      const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - start;
      context.op_profile->add(op_name(step.kind), real_rows, spent.count());
    }
    if (!status.ok()) {
      return status.with_context(str_cat(m.label_, " ", step.label));
    }
  }
  return ok_status();
}

}  // namespace staticlm
