#include "staticlm/runtime/program.h"

#include <utility>

#include "staticlm/format/metadata.h"
#include "staticlm/ops/op_set.h"

namespace staticlm {

struct Method::Step {
  std::string label;  // "instruction 3 (linear)"
  std::unique_ptr<Kernel> kernel;
  std::unique_ptr<DelegateHandle> delegate;
  std::vector<int32_t> inputs;    // value indices, -1 = absent
  std::vector<uint32_t> outputs;  // value indices, in the order the kernel / delegate writes them
  std::vector<TensorView> input_views;
  std::vector<TensorView> output_views;
};

Method::Method() = default;
Method::~Method() = default;

namespace {

std::string known_names(std::span<const IoTensorInfo> infos) {
  std::vector<std::string> names;
  for (const IoTensorInfo& info : infos) {
    names.push_back("'" + info.name + "'");
  }
  return names.empty() ? "none" : join(names, ", ");
}

int find_io(std::span<const IoTensorInfo> infos, std::string_view name) {
  for (size_t i = 0; i < infos.size(); ++i) {
    if (infos[i].name == name) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

Status check_binding(const IoTensorInfo& info, std::string_view kind, DType dtype, const void* data, uint64_t nbytes) {
  if (dtype != info.dtype) {
    return invalid_argument(kind, " '", info.name, "': expected dtype ", dtype_name(info.dtype), ", found ",
                            dtype_name(dtype));
  }
  if (nbytes != info.nbytes) {
    return invalid_argument(kind, " '", info.name, "': expected ", info.nbytes, " bytes (", dtype_name(info.dtype),
                            shape_string(info.shape), "), found ", nbytes);
  }
  if (data == nullptr && nbytes > 0) {
    return invalid_argument(kind, " '", info.name, "': null data pointer");
  }
  return ok_status();
}

}  // namespace

int Method::input_index(std::string_view name) const {
  return find_io(inputs_, name);
}
int Method::output_index(std::string_view name) const {
  return find_io(outputs_, name);
}

Status Method::bind_input(std::string_view name, DType dtype, void* data, uint64_t nbytes) {
  const int index = input_index(name);
  if (index < 0) {
    return not_found("method '", name_, "' has no input '", name, "' (inputs: ", known_names(inputs_), ")");
  }
  const auto i = static_cast<size_t>(index);
  STATICLM_RETURN_IF_ERROR(check_binding(inputs_[i], "input", dtype, data, nbytes));
  values_[input_values_[i]].set_data(data);
  input_bound_[i] = true;
  return ok_status();
}

Status Method::bind_output(std::string_view name, DType dtype, void* data, uint64_t nbytes) {
  const int index = output_index(name);
  if (index < 0) {
    return not_found("method '", name_, "' has no output '", name, "' (outputs: ", known_names(outputs_), ")");
  }
  const auto i = static_cast<size_t>(index);
  STATICLM_RETURN_IF_ERROR(check_binding(outputs_[i], "output", dtype, data, nbytes));
  values_[output_values_[i]].set_data(data);
  output_bound_[i] = true;
  return ok_status();
}

Status Method::bind_input(std::string_view name, Tensor& tensor) {
  return bind_input(name, tensor.dtype(), tensor.bytes().data(), tensor.nbytes());
}

Status Method::bind_output(std::string_view name, Tensor& tensor) {
  return bind_output(name, tensor.dtype(), tensor.bytes().data(), tensor.nbytes());
}

Status Method::execute() {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (!input_bound_[i]) {
      return failed_precondition("method '", name_, "': input '", inputs_[i].name, "' is not bound");
    }
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (!output_bound_[i]) {
      return failed_precondition("method '", name_, "': output '", outputs_[i].name, "' is not bound");
    }
  }
  KernelContext context{thread_pool_.get()};
  for (Step& step : steps_) {
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      step.input_views[i] = step.inputs[i] < 0 ? TensorView() : values_[static_cast<size_t>(step.inputs[i])];
    }
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      step.output_views[i] = values_[step.outputs[i]];
    }
    Status status = step.kernel ? step.kernel->execute(step.input_views, step.output_views, context)
                                : step.delegate->execute(step.input_views, step.output_views, context);
    if (!status.ok()) {
      return status.with_context(str_cat("method '", name_, "' ", step.label));
    }
  }
  return ok_status();
}

Result<std::unique_ptr<Program>> Program::load(const std::string& path, LoadOptions options) {
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<ProgramFile> file, ProgramFile::open(path));
  return from_file(std::move(file), std::move(options));
}

Result<std::unique_ptr<Program>> Program::from_file(std::unique_ptr<ProgramFile> file, LoadOptions options) {
  if (options.kernels == nullptr) {
    return invalid_argument("LoadOptions.kernels is required");
  }
  if (!options.thread_pool) {
    options.thread_pool = std::make_shared<ThreadPool>(options.num_threads);
  }
  std::unique_ptr<Program> program(new Program());
  program->file_ = std::move(file);
  program->options_ = std::move(options);
  return program;
}

std::vector<std::string> Program::method_names() const {
  std::vector<std::string> names;
  if (const auto* methods = file_->program().methods()) {
    for (const fb::Method* method : *methods) {
      names.push_back(method->name()->str());
    }
  }
  return names;
}

namespace {

std::vector<IoTensorInfo> io_infos(const fb::Method& method,
                                   const flatbuffers::Vector<flatbuffers::Offset<fb::IoTensor>>* io) {
  std::vector<IoTensorInfo> infos;
  if (io == nullptr) {
    return infos;
  }
  for (const fb::IoTensor* tensor : *io) {
    const fb::Value* value = method.values()->Get(tensor->value());
    IoTensorInfo info;
    info.name = tensor->name()->str();
    info.dtype = static_cast<DType>(value->dtype());
    if (value->shape() != nullptr) {
      info.shape.assign(value->shape()->begin(), value->shape()->end());
    }
    // The file verifier checked dtype x shape, so this cannot fail for a value of an opened file.
    auto bytes = tensor_bytes(info.dtype, info.shape);
    info.nbytes = bytes.ok() ? *bytes : 0;
    info.is_mutable = tensor->mutable_();
    infos.push_back(std::move(info));
  }
  return infos;
}

}  // namespace

Result<std::vector<IoTensorInfo>> Program::method_inputs(std::string_view name) const {
  const fb::Method* method = file_->find_method(name);
  if (method == nullptr) {
    return not_found("program '", file_->path(), "' has no method '", name, "' (methods: ", join(method_names(), ", "),
                     ")");
  }
  return io_infos(*method, method->inputs());
}

Result<std::vector<IoTensorInfo>> Program::method_outputs(std::string_view name) const {
  const fb::Method* method = file_->find_method(name);
  if (method == nullptr) {
    return not_found("program '", file_->path(), "' has no method '", name, "' (methods: ", join(method_names(), ", "),
                     ")");
  }
  return io_infos(*method, method->outputs());
}

namespace {

// Load-time state shared by the per-instruction preparation below.
struct MethodBuilder {
  const ProgramFile& file;
  const fb::Method& method;
  const LoadOptions& options;
  std::vector<TensorSpec> specs;  // per value
  std::vector<fb::StorageKind> storage;
  std::vector<bool> defined;        // written by an earlier instruction, or input / constant
  std::vector<bool> mutable_input;  // per value: an input the program may write

  TensorSpec spec_of(uint32_t value) const { return specs[value]; }

  // A value an instruction writes must be the method's own memory (arena or output), or a
  // mutable input when the op updates it in place.
  Status check_writable(const std::string& label, uint32_t value, bool in_place) const {
    const fb::StorageKind kind = storage[value];
    if (kind == fb::StorageKind::Arena || kind == fb::StorageKind::Output) {
      return ok_status();
    }
    if (kind == fb::StorageKind::Input && in_place && mutable_input[value]) {
      return ok_status();
    }
    return invalid_argument(label, ": writes value ", value, ", which is ",
                            kind == fb::StorageKind::Constant ? "a constant" : "an input not marked mutable");
  }

  Status check_reads(const std::string& label, std::span<const int32_t> inputs) const {
    for (int32_t input : inputs) {
      if (input >= 0 && !defined[static_cast<size_t>(input)]) {
        return invalid_argument(label, ": reads value ", input, " before any instruction writes it");
      }
    }
    return ok_status();
  }
};

}  // namespace

Result<std::unique_ptr<Method>> Program::load_method(std::string_view name) const {
  const fb::Method* method = file_->find_method(name);
  if (method == nullptr) {
    std::vector<std::string> names = method_names();
    return not_found("program '", file_->path(), "' has no method '", name,
                     "' (methods: ", names.empty() ? "none" : join(names, ", "), ")");
  }
  std::unique_ptr<Method> out(new Method());
  out->name_ = std::string(name);
  out->file_ = file_;
  out->thread_pool_ = options_.thread_pool;

  const auto* values = method->values();
  const size_t num_values = values == nullptr ? 0 : values->size();
  MethodBuilder builder{*file_, *method, options_, {}, {}, {}, {}};
  builder.specs.resize(num_values);
  builder.storage.resize(num_values);
  builder.defined.assign(num_values, false);
  builder.mutable_input.assign(num_values, false);

  const fb::MemoryPlan* plan = method->memory_plan();
  // The file's arena_size is untrusted: allocate only what the arena values reach (the reader
  // checked each lies inside arena_size), so a huge declared size cannot force a huge allocation.
  uint64_t arena_size = 0;
  for (size_t v = 0; v < num_values; ++v) {
    const fb::Value* value = values->Get(static_cast<flatbuffers::uoffset_t>(v));
    if (value->storage() == fb::StorageKind::Arena) {
      Shape shape;
      if (value->shape() != nullptr) {
        shape.assign(value->shape()->begin(), value->shape()->end());
      }
      STATICLM_ASSIGN_OR_RETURN(uint64_t bytes, tensor_bytes(static_cast<DType>(value->dtype()), shape));
      arena_size = std::max(arena_size, value->index() + bytes);
    }
  }
  const uint32_t alignment = plan == nullptr ? 64 : std::max<uint32_t>(64, plan->arena_alignment());
  STATICLM_ASSIGN_OR_RETURN(out->arena_, AlignedBuffer::allocate(arena_size, alignment));

  out->shapes_.resize(num_values);
  out->values_.resize(num_values);
  for (size_t v = 0; v < num_values; ++v) {
    const fb::Value* value = values->Get(static_cast<flatbuffers::uoffset_t>(v));
    Shape shape;
    if (value->shape() != nullptr) {
      shape.assign(value->shape()->begin(), value->shape()->end());
    }
    out->shapes_[v] = std::move(shape);
    const auto dtype = static_cast<DType>(value->dtype());
    builder.specs[v] = TensorSpec{dtype, out->shapes_[v]};
    builder.storage[v] = value->storage();
    void* data = nullptr;
    switch (value->storage()) {
      case fb::StorageKind::Arena: data = out->arena_.data() + value->index(); break;
      case fb::StorageKind::Constant:
        // Kernels never write constants (checked below), so dropping const is safe.
        data = const_cast<uint8_t*>(file_->constant_bytes(static_cast<uint32_t>(value->index())).data());
        builder.defined[v] = true;
        break;
      case fb::StorageKind::Input: builder.defined[v] = true; break;
      case fb::StorageKind::Output: break;
    }
    out->values_[v] = TensorView(data, dtype, out->shapes_[v]);
  }

  out->inputs_ = io_infos(*method, method->inputs());
  out->outputs_ = io_infos(*method, method->outputs());
  if (method->inputs() != nullptr) {
    for (const fb::IoTensor* tensor : *method->inputs()) {
      out->input_values_.push_back(tensor->value());
    }
  }
  if (method->outputs() != nullptr) {
    for (const fb::IoTensor* tensor : *method->outputs()) {
      out->output_values_.push_back(tensor->value());
    }
  }
  for (size_t i = 0; i < out->inputs_.size(); ++i) {
    builder.mutable_input[out->input_values_[i]] = out->inputs_[i].is_mutable;
  }
  out->input_bound_.assign(out->inputs_.size(), false);
  out->output_bound_.assign(out->outputs_.size(), false);

  const auto* instructions = method->instructions();
  const size_t num_instructions = instructions == nullptr ? 0 : instructions->size();
  out->steps_.resize(num_instructions);
  for (size_t n = 0; n < num_instructions; ++n) {
    const fb::InstructionEntry* entry = instructions->Get(static_cast<flatbuffers::uoffset_t>(n));
    Method::Step& step = out->steps_[n];
    if (const fb::KernelCall* call = entry->instruction_as_KernelCall()) {
      step.label = str_cat("instruction ", n, " (", call->op()->str(), ")");
      auto op = find_op(call->op()->str());
      if (!op.ok()) {
        return op.status().with_context(str_cat("method '", name, "' instruction ", n));
      }
      if (call->inputs() != nullptr) {
        step.inputs.assign(call->inputs()->begin(), call->inputs()->end());
      }
      if (call->outputs() != nullptr) {
        step.outputs.assign(call->outputs()->begin(), call->outputs()->end());
      }
      const std::string label = str_cat("method '", name, "' ", step.label);
      STATICLM_ASSIGN_OR_RETURN(Attributes attributes, attributes_from_fb(call->attributes()));
      std::vector<TensorSpec> input_specs(step.inputs.size());
      std::vector<const TensorSpec*> input_ptrs(step.inputs.size(), nullptr);
      for (size_t i = 0; i < step.inputs.size(); ++i) {
        if (step.inputs[i] >= 0) {
          input_specs[i] = builder.specs[static_cast<size_t>(step.inputs[i])];
          input_ptrs[i] = &input_specs[i];
        }
      }
      auto inferred = infer_outputs(*op, input_ptrs, attributes);
      if (!inferred.ok()) {
        return inferred.status().with_context(label);
      }
      if (inferred->size() != step.outputs.size()) {
        return invalid_argument(label, ": expected ", inferred->size(), " outputs, found ", step.outputs.size());
      }
      std::vector<TensorSpec> output_specs;
      const int in_place = in_place_input(*op, attributes);
      for (size_t i = 0; i < step.outputs.size(); ++i) {
        const TensorSpec declared = builder.specs[step.outputs[i]];
        if (declared != (*inferred)[i]) {
          return invalid_argument(label, ": output ", i, " is declared ", dtype_name(declared.dtype),
                                  shape_string(declared.shape), " but the op produces ",
                                  dtype_name((*inferred)[i].dtype), shape_string((*inferred)[i].shape));
        }
        const bool aliases = in_place >= 0 && i == 0;
        if (aliases && static_cast<int64_t>(step.outputs[0]) != step.inputs[static_cast<size_t>(in_place)]) {
          return invalid_argument(label, ": updates input ", in_place, " in place, so output 0 must be value ",
                                  step.inputs[static_cast<size_t>(in_place)], ", found value ", step.outputs[0]);
        }
        if (!aliases) {
          for (int32_t input : step.inputs) {
            if (input == static_cast<int32_t>(step.outputs[i])) {
              return invalid_argument(label, ": output ", i, " is also one of its inputs");
            }
          }
        }
        STATICLM_RETURN_IF_ERROR(builder.check_writable(label, step.outputs[i], aliases));
        output_specs.push_back(declared);
      }
      STATICLM_RETURN_IF_ERROR(builder.check_reads(label, step.inputs));
      const KernelFactory* factory = options_.kernels->find(*op);
      if (factory == nullptr) {
        return unimplemented(label, ": no kernel is registered for op '", op_name(*op), "'");
      }
      KernelSignature signature{*op, input_ptrs, output_specs, attributes};
      auto kernel = (*factory)(signature);
      if (!kernel.ok()) {
        return kernel.status().with_context(label);
      }
      step.kernel = std::move(kernel).value();
    } else if (const fb::DelegateCall* delegate_call = entry->instruction_as_DelegateCall()) {
      const fb::Delegate* delegate = file_->program().delegates()->Get(delegate_call->delegate());
      const std::string backend_id = delegate->backend_id()->str();
      step.label =
          str_cat("instruction ", n, " (delegate ", delegate_call->delegate(), ", backend '", backend_id, "')");
      const std::string label = str_cat("method '", name, "' ", step.label);
      const BackendRuntime* backend = options_.backends == nullptr ? nullptr : options_.backends->find(backend_id);
      if (backend == nullptr) {
        return unimplemented(label, ": backend '", backend_id, "' is not available in this runtime");
      }
      std::vector<uint32_t> call_outputs;
      if (delegate_call->inputs() != nullptr) {
        for (uint32_t input : *delegate_call->inputs()) {
          step.inputs.push_back(static_cast<int32_t>(input));
        }
      }
      if (delegate_call->outputs() != nullptr) {
        call_outputs.assign(delegate_call->outputs()->begin(), delegate_call->outputs()->end());
      }
      STATICLM_RETURN_IF_ERROR(builder.check_reads(label, step.inputs));
      std::vector<TensorSpec> input_specs;
      for (int32_t input : step.inputs) {
        input_specs.push_back(builder.specs[static_cast<size_t>(input)]);
      }
      std::vector<CompileSpecView> compile_specs;
      if (delegate->compile_specs() != nullptr) {
        for (const fb::CompileSpec* spec : *delegate->compile_specs()) {
          std::span<const uint8_t> bytes;
          if (spec->value() != nullptr) {
            bytes = std::span<const uint8_t>(spec->value()->data(), spec->value()->size());
          }
          compile_specs.push_back({spec->key()->string_view(), bytes});
        }
      }
      DelegateInit init{file_->segment(delegate->blob_segment()), compile_specs, input_specs};
      auto handle = backend->init(init);
      if (!handle.ok()) {
        return handle.status().with_context(label);
      }
      // The delegate writes its outputs in its own order; output_order says which program
      // value each one is, so bind internal output i to call_outputs[output_order[i]].
      std::span<const TensorSpec> produced = (*handle)->output_specs();
      if (produced.size() != call_outputs.size()) {
        return invalid_argument(label, ": the delegate produces ", produced.size(), " outputs, the program binds ",
                                call_outputs.size());
      }
      const auto* order = delegate->output_order();
      for (size_t i = 0; i < produced.size(); ++i) {
        const uint32_t target =
            call_outputs[order == nullptr || order->size() == 0 ? i
                                                                : order->Get(static_cast<flatbuffers::uoffset_t>(i))];
        const TensorSpec& bound = builder.specs[target];
        auto produced_bytes = tensor_bytes(produced[i].dtype, produced[i].shape);
        if (!produced_bytes.ok() || produced[i].dtype != bound.dtype ||
            out->values_[target].nbytes() != *produced_bytes) {
          return invalid_argument(label, ": delegate output ", i, " is ", dtype_name(produced[i].dtype),
                                  shape_string(produced[i].shape), " but is bound to value ", target, " (",
                                  dtype_name(bound.dtype), shape_string(bound.shape), ")");
        }
        STATICLM_RETURN_IF_ERROR(builder.check_writable(label, target, false));
        step.outputs.push_back(target);
      }
      for (uint32_t position : (*handle)->updated_inputs()) {
        if (position >= step.inputs.size()) {
          return invalid_argument(label, ": the delegate updates input ", position, ", the call has ",
                                  step.inputs.size(), " inputs");
        }
        STATICLM_RETURN_IF_ERROR(builder.check_writable(label, static_cast<uint32_t>(step.inputs[position]), true));
      }
      step.delegate = std::move(handle).value();
    } else {
      return invalid_argument("method '", name, "' instruction ", n, ": unknown instruction type");
    }
    for (uint32_t output : step.outputs) {
      builder.defined[output] = true;
    }
    step.input_views.resize(step.inputs.size());
    step.output_views.resize(step.outputs.size());
  }
  for (size_t i = 0; i < out->outputs_.size(); ++i) {
    if (!builder.defined[out->output_values_[i]]) {
      return invalid_argument("method '", name, "': output '", out->outputs_[i].name, "' is never written");
    }
  }
  return out;
}

}  // namespace staticlm
