// SPDX-License-Identifier: Apache-2.0
#include "staticlm/runtime/prepared_method.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "staticlm/core/checked_math.h"
#include "staticlm/runtime/method_session.h"
#include "staticlm/runtime/prepared_method_step.h"

namespace staticlm {

PreparedMethod::PreparedMethod() = default;
PreparedMethod::~PreparedMethod() = default;

namespace {

constexpr uint32_t kMinArenaAlignment = 16;
constexpr uint32_t kMaxArenaAlignment = 4096;
// Constant and named data views are read by SIMD kernels; program segments are 64-aligned.
constexpr uintptr_t kFixedDataAlignment = 16;

int find_io(std::span<const IoTensorInfo> infos, std::string_view name) {
  for (size_t i = 0; i < infos.size(); ++i) {
    if (infos[i].name == name) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

}  // namespace

int PreparedMethod::input_index(std::string_view name) const {
  return find_io(inputs_, name);
}
int PreparedMethod::output_index(std::string_view name) const {
  return find_io(outputs_, name);
}

KernelReport PreparedMethod::kernel_report() const {
  KernelReport report;
  report.features = kernel_features_.to_string();
  for (const InstructionChoice& choice : choices_) {
    if (choice.delegate == nullptr) {
      report.nodes.push_back({choice.label, choice.op, choice.runner});
    }
  }
  return report;
}

// Verifies one instruction list and fills a PreparedMethod; see the header for the rules.
class PreparedMethod::Builder {
 public:
  Builder(MethodSpec method, const PrepareContext& context) : spec_(std::move(method)), context_(context) {
    out_.reset(new PreparedMethod());
    out_->name_ = spec_.name;
    out_->label_ = context.label.empty() ? str_cat("method '", spec_.name, "'") : context.label;
    out_->kernel_features_ = context.allowed_features;
  }

  Result<std::unique_ptr<PreparedMethod>> run() {
    STATICLM_RETURN_IF_ERROR(read_values());
    STATICLM_RETURN_IF_ERROR(read_io());
    for (size_t n = 0; n < spec_.instructions.size(); ++n) {
      STATICLM_RETURN_IF_ERROR(prepare_instruction(n));
    }
    for (size_t i = 0; i < out_->outputs_.size(); ++i) {
      if (!defined_[out_->output_values_[i]]) {
        return invalid_argument(label(), ": output '", out_->outputs_[i].name, "' is never written");
      }
    }
    record_io_uses();
    find_row_positions();
    return std::move(out_);
  }

 private:
  const std::string& label() const { return out_->label_; }

  Status read_values() {
    const size_t count = spec_.values.size();
    out_->specs_.resize(count);
    out_->storage_.resize(count);
    out_->arena_offset_.assign(count, 0);
    out_->fixed_data_.assign(count, nullptr);
    defined_.assign(count, false);
    mutable_input_.assign(count, false);
    const uint32_t alignment = spec_.arena_alignment == 0 ? 64 : spec_.arena_alignment;
    if (!is_power_of_two(alignment) || alignment < kMinArenaAlignment || alignment > kMaxArenaAlignment) {
      return invalid_argument(label(), ": arena alignment ", alignment, " is not a power of two in [",
                              kMinArenaAlignment, ", ", kMaxArenaAlignment, "]");
    }
    out_->arena_alignment_ = alignment;
    for (size_t v = 0; v < count; ++v) {
      ValueSpec& value = spec_.values[v];
      const std::string what = str_cat(label(), " value ", v);
      const DTypeInfo* dtype = find_dtype(static_cast<uint8_t>(value.dtype));
      if (dtype == nullptr) {
        return invalid_argument(what, ": unknown dtype code ", static_cast<int>(value.dtype));
      }
      auto bytes = tensor_bytes(value.dtype, value.shape);
      if (!bytes.ok()) {
        return invalid_argument(what, ": ", bytes.status().message());
      }
      out_->specs_[v] = TensorSpec{value.dtype, std::move(value.shape)};
      out_->storage_[v] = value.storage;
      switch (value.storage) {
        case ValueStorage::kArena: {
          // The arena a session allocates is what its values reach: a declared size, being
          // untrusted, never decides an allocation.
          auto end = checked_add(value.index, *bytes);
          if (!end || value.index % alignment != 0) {
            return invalid_argument(what, ": arena offset ", value.index, " (", *bytes,
                                    " bytes) is not an aligned range of the arena (alignment ", alignment, ")");
          }
          out_->arena_offset_[v] = value.index;
          out_->arena_bytes_ = std::max(out_->arena_bytes_, *end);
          break;
        }
        case ValueStorage::kInput: defined_[v] = true; break;
        case ValueStorage::kOutput: break;
        case ValueStorage::kConstant: {
          if (!context_.constant) {
            return invalid_argument(what, ": a constant, but this method can have none");
          }
          STATICLM_ASSIGN_OR_RETURN(std::span<const uint8_t> data, context_.constant(value.index));
          STATICLM_RETURN_IF_ERROR(check_fixed(what, str_cat("constant ", value.index), data, *bytes));
          // Kernels never write constants (checked below), so dropping const is safe.
          out_->fixed_data_[v] = const_cast<uint8_t*>(data.data());
          defined_[v] = true;
          break;
        }
        case ValueStorage::kNamedData: {
          if (context_.named_data == nullptr) {
            return invalid_argument(what, ": named data '", value.key, "', but this method is given none");
          }
          auto data = context_.named_data->get(value.key);
          if (!data.ok()) {
            return data.status().with_context(what);
          }
          STATICLM_RETURN_IF_ERROR(check_fixed(what, str_cat("named data '", value.key, "'"), *data, *bytes));
          out_->fixed_data_[v] = const_cast<uint8_t*>(data->data());
          defined_[v] = true;
          break;
        }
        default: return invalid_argument(what, ": unknown storage kind ", static_cast<int>(value.storage));
      }
    }
    return ok_status();
  }

  static Status check_fixed(const std::string& what, const std::string& source, std::span<const uint8_t> data,
                            uint64_t bytes) {
    if (data.size() != bytes) {
      return invalid_argument(what, ": needs ", bytes, " bytes, ", source, " holds ", data.size());
    }
    if (bytes != 0 && reinterpret_cast<uintptr_t>(data.data()) % kFixedDataAlignment != 0) {
      return invalid_argument(what, ": ", source, " is not ", kFixedDataAlignment, "-byte aligned");
    }
    return ok_status();
  }

  Status read_io_list(const std::vector<IoSpec>& io, ValueStorage storage, std::vector<IoTensorInfo>& infos,
                      std::vector<uint32_t>& values, std::string_view kind) {
    std::unordered_set<std::string_view> names;
    for (size_t i = 0; i < io.size(); ++i) {
      const IoSpec& tensor = io[i];
      const std::string what = str_cat(label(), " ", kind, " '", tensor.name, "'");
      if (tensor.name.empty() || !names.insert(tensor.name).second) {
        return invalid_argument(what, ": ", kind, " names must be non-empty and unique");
      }
      if (tensor.value >= spec_.values.size() || out_->storage_[tensor.value] != storage ||
          spec_.values[tensor.value].index != i) {
        return invalid_argument(what, ": value ", tensor.value, " is not stored as ", kind, " ", i);
      }
      const TensorSpec& spec = out_->specs_[tensor.value];
      IoTensorInfo info;
      info.name = tensor.name;
      info.dtype = spec.dtype;
      info.shape = spec.shape;
      // Valid: read_values checked every value's byte size.
      info.nbytes = tensor_bytes(spec.dtype, spec.shape).value();
      info.is_mutable = storage == ValueStorage::kInput && tensor.is_mutable;
      infos.push_back(std::move(info));
      values.push_back(tensor.value);
    }
    // A second value claiming the same slot would never be bound: kernels would meet a null pointer.
    for (size_t v = 0; v < spec_.values.size(); ++v) {
      if (out_->storage_[v] != storage) {
        continue;
      }
      const uint64_t index = spec_.values[v].index;
      if (index >= io.size()) {
        return invalid_argument(label(), " value ", v, ": ", kind, " index ", index,
                                " is out of range (the method has ", io.size(), " ", kind, "s)");
      }
      if (io[index].value != v) {
        return invalid_argument(label(), " value ", v, ": ", kind, " ", index, " ('", io[index].name, "') is value ",
                                io[index].value, ", not this one");
      }
    }
    return ok_status();
  }

  Status read_io() {
    STATICLM_RETURN_IF_ERROR(
        read_io_list(spec_.inputs, ValueStorage::kInput, out_->inputs_, out_->input_values_, "input"));
    STATICLM_RETURN_IF_ERROR(
        read_io_list(spec_.outputs, ValueStorage::kOutput, out_->outputs_, out_->output_values_, "output"));
    for (size_t i = 0; i < out_->inputs_.size(); ++i) {
      mutable_input_[out_->input_values_[i]] = out_->inputs_[i].is_mutable;
    }
    return ok_status();
  }

  Status check_value(const std::string& where, int64_t value) const {
    if (value < 0 || static_cast<size_t>(value) >= spec_.values.size()) {
      return invalid_argument(where, ": value ", value, " is out of range (", spec_.values.size(), " values)");
    }
    return ok_status();
  }

  // A value an instruction writes must be the method's own memory (arena or output), or a
  // mutable input when the instruction updates it in place.
  Status check_writable(const std::string& where, uint32_t value, bool in_place) const {
    const ValueStorage kind = out_->storage_[value];
    if (kind == ValueStorage::kArena || kind == ValueStorage::kOutput) {
      return ok_status();
    }
    if (kind == ValueStorage::kInput && in_place && mutable_input_[value]) {
      return ok_status();
    }
    const char* what = kind == ValueStorage::kInput ? "an input not marked mutable" : "read-only data";
    if (kind == ValueStorage::kConstant) {
      what = "a constant";
    }
    return invalid_argument(where, ": writes value ", value, ", which is ", what);
  }

  Status check_reads(const std::string& where, std::span<const int32_t> inputs) const {
    for (int32_t input : inputs) {
      if (input >= 0 && !defined_[static_cast<size_t>(input)]) {
        return invalid_argument(where, ": reads value ", input, " before any instruction writes it");
      }
    }
    return ok_status();
  }

  Status prepare_instruction(size_t n) {
    Step step;
    if (auto* call = std::get_if<KernelCallSpec>(&spec_.instructions[n])) {
      step.label = str_cat("instruction ", n, " (", call->op, ")");
      STATICLM_RETURN_IF_ERROR(prepare_kernel_call(*call, step));
    } else {
      const auto& delegate_call = std::get<DelegateCallSpec>(spec_.instructions[n]);
      step.label = str_cat("instruction ", n, " (delegate ", delegate_call.delegate, ")");
      STATICLM_RETURN_IF_ERROR(prepare_delegate_call(delegate_call, step));
    }
    for (uint32_t output : step.outputs) {
      defined_[output] = true;
    }
    out_->steps_.push_back(std::move(step));
    return ok_status();
  }

  Status prepare_kernel_call(const KernelCallSpec& call, Step& step) {
    const std::string where = str_cat(label(), " ", step.label);
    auto op = find_op(call.op);
    if (!op.ok()) {
      return invalid_argument(where, ": ", op.status().message());
    }
    step.kind = *op;
    for (int32_t input : call.inputs) {
      if (input != kAbsentValue) {
        STATICLM_RETURN_IF_ERROR(check_value(where, input));
      }
    }
    for (uint32_t output : call.outputs) {
      STATICLM_RETURN_IF_ERROR(check_value(where, output));
    }
    step.inputs = call.inputs;
    step.outputs = call.outputs;
    std::vector<const TensorSpec*> input_specs(step.inputs.size(), nullptr);
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      if (step.inputs[i] >= 0) {
        input_specs[i] = &out_->specs_[static_cast<size_t>(step.inputs[i])];
      }
    }
    auto inferred = infer_outputs(*op, input_specs, call.attributes);
    if (!inferred.ok()) {
      return inferred.status().with_context(where);
    }
    if (inferred->size() != step.outputs.size()) {
      return invalid_argument(where, ": expected ", inferred->size(), " outputs, found ", step.outputs.size());
    }
    const std::vector<InPlaceUpdate> in_place = in_place_updates(*op, call.attributes);
    std::vector<TensorSpec> output_specs;
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      const TensorSpec& declared = out_->specs_[step.outputs[i]];
      if (declared != (*inferred)[i]) {
        return invalid_argument(where, ": output ", i, " is declared ", dtype_name(declared.dtype),
                                shape_string(declared.shape), " but the op produces ", dtype_name((*inferred)[i].dtype),
                                shape_string((*inferred)[i].shape));
      }
      const auto update =
          std::find_if(in_place.begin(), in_place.end(), [i](const InPlaceUpdate& u) { return u.output == i; });
      const bool aliases = update != in_place.end();
      if (aliases && update->input >= step.inputs.size()) {
        return invalid_argument(where, ": updates input ", update->input, " in place, but has ", step.inputs.size(),
                                " inputs");
      }
      if (aliases && static_cast<int64_t>(step.outputs[i]) != step.inputs[update->input]) {
        return invalid_argument(where, ": updates input ", update->input, " in place, so output ", i, " must be value ",
                                step.inputs[update->input], ", found value ", step.outputs[i]);
      }
      if (!aliases && std::find(step.inputs.begin(), step.inputs.end(), static_cast<int32_t>(step.outputs[i])) !=
                          step.inputs.end()) {
        return invalid_argument(where, ": output ", i, " is also one of its inputs");
      }
      STATICLM_RETURN_IF_ERROR(check_writable(where, step.outputs[i], aliases));
      output_specs.push_back(declared);
    }
    STATICLM_RETURN_IF_ERROR(check_reads(where, step.inputs));
    if (context_.kernels == nullptr) {
      return invalid_argument(where, ": no kernel registry was given");
    }
    // Kernels see every attribute the op set means, the defaults included.
    const Attributes attributes = with_default_attributes(*op, input_specs, call.attributes);
    KernelSignature signature{*op, input_specs, output_specs, attributes};
    auto kernel = context_.kernels->select(signature, context_.allowed_features);
    if (!kernel.ok()) {
      return kernel.status().with_context(where);
    }
    step.kernel = std::move(kernel->kernel);
    out_->choices_.push_back({step.label, kernel->name, std::string(op_name(*op)), nullptr});
    return ok_status();
  }

  Status prepare_delegate_call(const DelegateCallSpec& call, Step& step) {
    std::string where = str_cat(label(), " ", step.label);
    if (!context_.init_delegate) {
      return invalid_argument(where, ": this method cannot call a delegate");
    }
    std::vector<TensorSpec> input_specs;
    for (uint32_t input : call.inputs) {
      STATICLM_RETURN_IF_ERROR(check_value(where, input));
      step.inputs.push_back(static_cast<int32_t>(input));
      input_specs.push_back(out_->specs_[input]);
    }
    for (uint32_t output : call.outputs) {
      STATICLM_RETURN_IF_ERROR(check_value(where, output));
    }
    STATICLM_RETURN_IF_ERROR(check_reads(where, step.inputs));
    // The context's errors name the instruction and the backend themselves.
    STATICLM_ASSIGN_OR_RETURN(
        PreparedDelegate prepared_delegate,
        context_.init_delegate(call, input_specs, str_cat(label(), " instruction ", out_->steps_.size())));
    PreparedDelegate* prepared = &prepared_delegate;
    step.label = str_cat("instruction ", out_->steps_.size(), " (", prepared->description, ")");
    where = str_cat(label(), " ", step.label);
    // The delegate writes its outputs in its own order; output_order says which call output each
    // one is, so internal output i is bound to call.outputs[output_order[i]].
    std::span<const TensorSpec> produced = prepared->handle->output_specs();
    const std::vector<uint32_t>& order = prepared->output_order;
    if (produced.size() != call.outputs.size() || (!order.empty() && order.size() != produced.size())) {
      return invalid_argument(where, ": the delegate produces ", produced.size(), " outputs, the program binds ",
                              call.outputs.size());
    }
    for (size_t i = 0; i < produced.size(); ++i) {
      const size_t position = order.empty() ? i : order[i];
      if (position >= call.outputs.size()) {
        return invalid_argument(where, ": output order entry ", i, " is ", position, ", the call has ",
                                call.outputs.size(), " outputs");
      }
      const uint32_t target = call.outputs[position];
      const TensorSpec& bound = out_->specs_[target];
      auto produced_bytes = tensor_bytes(produced[i].dtype, produced[i].shape);
      if (!produced_bytes.ok() || produced[i].dtype != bound.dtype ||
          *produced_bytes != tensor_bytes(bound.dtype, bound.shape).value()) {
        return invalid_argument(where, ": delegate output ", i, " is ", dtype_name(produced[i].dtype),
                                shape_string(produced[i].shape), " but is bound to value ", target, " (",
                                dtype_name(bound.dtype), shape_string(bound.shape), ")");
      }
      STATICLM_RETURN_IF_ERROR(check_writable(where, target, false));
      step.outputs.push_back(target);
    }
    for (uint32_t position : prepared->handle->updated_inputs()) {
      if (position >= step.inputs.size()) {
        return invalid_argument(where, ": the delegate updates input ", position, ", the call has ", step.inputs.size(),
                                " inputs");
      }
      STATICLM_RETURN_IF_ERROR(check_writable(where, static_cast<uint32_t>(step.inputs[position]), true));
    }
    step.delegate = std::move(prepared->handle);
    out_->choices_.push_back({step.label, prepared->description, "", step.delegate.get()});
    return ok_status();
  }

  // Which delegate steps see each method input / output directly, for bind_buffer.
  void record_io_uses() {
    out_->input_uses_.resize(out_->inputs_.size());
    out_->output_uses_.resize(out_->outputs_.size());
    for (size_t s = 0; s < out_->steps_.size(); ++s) {
      const Step& step = out_->steps_[s];
      if (!step.delegate) {
        continue;
      }
      for (size_t p = 0; p < step.inputs.size(); ++p) {
        const auto value = static_cast<size_t>(step.inputs[p]);
        if (out_->storage_[value] == ValueStorage::kInput) {
          out_->input_uses_[spec_.values[value].index].push_back(
              {static_cast<uint32_t>(s), DelegateIoRole::kInput, static_cast<uint32_t>(p)});
        }
      }
      for (size_t p = 0; p < step.outputs.size(); ++p) {
        const uint32_t value = step.outputs[p];
        if (out_->storage_[value] == ValueStorage::kOutput) {
          out_->output_uses_[spec_.values[value].index].push_back(
              {static_cast<uint32_t>(s), DelegateIoRole::kOutput, static_cast<uint32_t>(p)});
        }
      }
    }
  }

  // The method input every op with a positions input (OpDef::positions_input) reads them from,
  // if they all read the same one: its leading negative entries are the chunk's padding rows.
  void find_row_positions() {
    int32_t found = -1;
    for (const Step& step : out_->steps_) {
      if (!step.kernel) {
        continue;
      }
      const int operand = op_def(step.kind).positions_input;
      if (operand == kNoPositionsInput || static_cast<size_t>(operand) >= step.inputs.size()) {
        continue;
      }
      const int32_t value = step.inputs[static_cast<size_t>(operand)];
      if (value < 0 || (found >= 0 && value != found)) {
        return;  // absent, or two different position tensors: no padding is inferred
      }
      found = value;
    }
    if (found < 0 || out_->storage_[static_cast<size_t>(found)] != ValueStorage::kInput) {
      return;
    }
    const TensorSpec& spec = out_->specs_[static_cast<size_t>(found)];
    if (spec.shape.size() == 1 && (spec.dtype == DType::kI32 || spec.dtype == DType::kI64)) {
      out_->row_positions_value_ = found;
      out_->chunk_rows_ = spec.shape[0];
    }
  }

  MethodSpec spec_;
  const PrepareContext& context_;
  std::unique_ptr<PreparedMethod> out_;
  std::vector<bool> defined_;        // per value: an input, fixed data, or written by an earlier step
  std::vector<bool> mutable_input_;  // per value: an input the method may write in place
};

Result<std::unique_ptr<PreparedMethod>> PreparedMethod::prepare(MethodSpec method, const PrepareContext& context) {
  return Builder(std::move(method), context).run();
}

bool PreparedMethod::chunk_shaped(uint32_t v) const {
  if (chunk_rows_ <= 1) {
    return false;
  }
  for (int64_t dim : specs_[v].shape) {
    if (dim != 1) {
      return dim == chunk_rows_;
    }
  }
  return false;
}

// Backwards from the outputs' needs. A step runs when a later running step reads what it writes,
// or it writes a method input in place (a KV cache: the next call reads it), or it is a delegate
// call that updates its inputs. It runs on the last row alone when nothing reads more of what it
// writes, its op is row-wise and its outputs are chunk-shaped; it then needs only the last row of
// its chunk-shaped inputs and all of the others. A value's need only grows, so every writer of it
// runs for the most any reader needs (an in-place chain keeps its order). A delegate call runs
// whole, told what is read of each of its outputs; it needs all of its inputs.
void PreparedMethod::plan_run(std::span<const RowNeed> needs, RunPlan& plan) const {
  plan.values.assign(specs_.size(), RowNeed::kNone);
  // A last-row need stays one until a step writes the value: a kernel that cannot narrow to the
  // row widens it, a delegate call passes it on (its method knows the chunk's rows where this
  // one, all delegated, may not).
  for (size_t o = 0; o < output_values_.size(); ++o) {
    plan.values[output_values_[o]] = std::max(plan.values[output_values_[o]], needs[o]);
  }
  plan.steps.assign(steps_.size(), RowNeed::kNone);
  plan.outputs.resize(steps_.size());
  for (size_t s = steps_.size(); s-- > 0;) {
    const Step& step = steps_[s];
    RowNeed need = step.delegate && !step.delegate->updated_inputs().empty() ? RowNeed::kAll : RowNeed::kNone;
    bool rows_kept = step.kernel != nullptr && op_def(step.kind).row_wise;
    for (uint32_t value : step.outputs) {
      need = std::max(need, storage_[value] == ValueStorage::kInput ? RowNeed::kAll : plan.values[value]);
      rows_kept = rows_kept && chunk_shaped(value);
    }
    plan.outputs[s].clear();
    if (need == RowNeed::kLastRow && !rows_kept) {
      need = RowNeed::kAll;
    }
    if (step.delegate && need != RowNeed::kNone) {
      for (uint32_t value : step.outputs) {
        plan.outputs[s].push_back(plan.values[value]);
      }
      need = RowNeed::kAll;
    }
    plan.steps[s] = need;
    if (need == RowNeed::kNone) {
      continue;
    }
    for (int32_t input : step.inputs) {
      if (input >= 0) {
        const auto value = static_cast<uint32_t>(input);
        const RowNeed read = need == RowNeed::kLastRow && chunk_shaped(value) ? RowNeed::kLastRow : RowNeed::kAll;
        plan.values[value] = std::max(plan.values[value], read);
      }
    }
  }
}

Result<std::unique_ptr<MethodSession>> PreparedMethod::new_session(std::shared_ptr<const void> owner,
                                                                   ThreadPool* pool) const {
  std::unique_ptr<MethodSession> session(new MethodSession());
  session->owner_ = std::move(owner);
  session->method_ = this;
  session->pool_ = pool;
  STATICLM_ASSIGN_OR_RETURN(session->arena_, AlignedBuffer::allocate(arena_bytes_, arena_alignment_));
  session->values_.reserve(specs_.size());
  for (size_t v = 0; v < specs_.size(); ++v) {
    void* data = fixed_data_[v];
    if (storage_[v] == ValueStorage::kArena) {
      data = session->arena_.data() + arena_offset_[v];
    }
    session->values_.emplace_back(data, specs_[v].dtype, specs_[v].shape);
  }
  session->input_bound_.assign(inputs_.size(), false);
  session->output_bound_.assign(outputs_.size(), false);
  session->input_buffers_.resize(inputs_.size());
  session->output_buffers_.resize(outputs_.size());
  session->delegates_.resize(steps_.size());
  session->step_inputs_.resize(steps_.size());
  session->step_outputs_.resize(steps_.size());
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& step = steps_[s];
    if (step.delegate) {
      auto instance = step.delegate->new_instance();
      if (!instance.ok()) {
        return instance.status().with_context(str_cat(label_, " ", step.label));
      }
      session->delegates_[s] = std::move(instance).value();
    }
    session->step_inputs_[s].resize(step.inputs.size());
    session->step_outputs_[s].resize(step.outputs.size());
  }
  return session;
}

}  // namespace staticlm
