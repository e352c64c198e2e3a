// SPDX-License-Identifier: Apache-2.0
#include "staticlm/runtime/program.h"

#include <set>
#include <utility>

#include "staticlm/format/metadata.h"
#include "staticlm/format/method_reader.h"

namespace staticlm {
namespace {

std::string methods_list(const ProgramFile& file) {
  std::vector<std::string> names = method_names(file);
  return names.empty() ? "none" : join(names, ", ");
}

Result<const fb::Method*> find_method(const ProgramFile& file, std::string_view name) {
  const fb::Method* method = file.find_method(name);
  if (method == nullptr) {
    return not_found("program '", file.path(), "' has no method '", name, "' (methods: ", methods_list(file), ")");
  }
  return method;
}

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

class ProgramNamedData final : public NamedDataMap {
 public:
  explicit ProgramNamedData(const ProgramFile& file) : file_(file) {}
  Result<std::span<const uint8_t>> get(std::string_view key) const override {
    if (auto data = file_.named_data(key)) {
      return *data;
    }
    return not_found("named data '", key, "' is not in program '", file_.path(), "'");
  }

 private:
  const ProgramFile& file_;
};

}  // namespace

std::vector<std::string> method_names(const ProgramFile& file) {
  std::vector<std::string> names;
  if (const auto* methods = file.program().methods()) {
    for (const fb::Method* method : *methods) {
      names.push_back(method->name()->str());
    }
  }
  return names;
}

Result<std::vector<IoTensorInfo>> method_inputs(const ProgramFile& file, std::string_view name) {
  STATICLM_ASSIGN_OR_RETURN(const fb::Method* method, find_method(file, name));
  return io_infos(*method, method->inputs());
}

Result<std::vector<IoTensorInfo>> method_outputs(const ProgramFile& file, std::string_view name) {
  STATICLM_ASSIGN_OR_RETURN(const fb::Method* method, find_method(file, name));
  return io_infos(*method, method->outputs());
}

// Prepares every method of a verified file: runtime options first, then each method, each
// delegate call initialised through its backend.
class Program::Loader {
 public:
  Loader(Program& program, const LoadOptions& options) : program_(program), options_(options) {}

  Status run() {
    STATICLM_RETURN_IF_ERROR(resolve_backend_options());
    if (const auto* methods = file().program().methods()) {
      for (const fb::Method* method : *methods) {
        STATICLM_ASSIGN_OR_RETURN(MethodSpec spec, read_method_spec(*method));
        PrepareContext context;
        context.label = str_cat("method '", spec.name, "'");
        context.kernels = options_.kernels;
        context.allowed_features = options_.kernel_features;
        context.constant = [this](uint64_t index) -> Result<std::span<const uint8_t>> {
          return file().constant_bytes(static_cast<uint32_t>(index));
        };
        context.named_data = program_.named_data_.get();
        context.init_delegate = [this](const DelegateCallSpec& call, std::span<const TensorSpec> inputs,
                                       const std::string& label) { return init_delegate(call, inputs, label); };
        STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<PreparedMethod> prepared,
                                  PreparedMethod::prepare(std::move(spec), context));
        program_.methods_.push_back(std::move(prepared));
      }
    }
    return ok_status();
  }

 private:
  const ProgramFile& file() const { return *program_.file_; }

  // Every backend the delegates name gets its runtime options resolved, given or defaulted.
  Status resolve_backend_options() {
    std::set<std::string, std::less<>> used;
    if (const auto* delegates = file().program().delegates()) {
      for (const fb::Delegate* delegate : *delegates) {
        used.insert(delegate->backend_id()->str());
      }
    }
    for (const auto& [id, given] : options_.backend_options) {
      if (used.count(id) == 0) {
        std::vector<std::string> names(used.begin(), used.end());
        return invalid_argument("runtime options are given for backend '", id, "', but no delegate of '", file().path(),
                                "' uses it (",
                                names.empty() ? "it has no delegates" : "its backends: ", join(names, ", "), ")");
      }
    }
    for (const std::string& id : used) {
      const BackendRuntime* backend = options_.backends == nullptr ? nullptr : options_.backends->find(id);
      if (backend == nullptr) {
        continue;  // init_delegate reports it, naming the instruction
      }
      auto given = options_.backend_options.find(id);
      static const OptionMap kNone;
      auto resolved = resolve_options(backend->runtime_options(),
                                      given == options_.backend_options.end() ? kNone : given->second, backend->sdk());
      if (!resolved.ok()) {
        return resolved.status().with_context(str_cat("backend '", id, "' runtime options"));
      }
      program_.backend_options_.emplace(id, std::move(resolved).value());
    }
    return ok_status();
  }

  Result<PreparedDelegate> init_delegate(const DelegateCallSpec& call, std::span<const TensorSpec> inputs,
                                         const std::string& label) {
    const fb::Delegate* delegate = file().program().delegates()->Get(call.delegate);
    const std::string backend_id = delegate->backend_id()->str();
    PreparedDelegate out;
    out.description = str_cat("delegate ", call.delegate, ", backend '", backend_id, "'");
    const std::string where = str_cat(label, " (", out.description, ")");
    const BackendRuntime* backend = options_.backends == nullptr ? nullptr : options_.backends->find(backend_id);
    if (backend == nullptr) {
      return unimplemented(where, ": backend '", backend_id, "' is not available in this runtime");
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
    DelegateInit init;
    init.label = where;
    init.blob = file().segment(delegate->blob_segment());
    init.compile_specs = compile_specs;
    init.inputs = inputs;
    init.named_data = program_.named_data_.get();
    init.options = &program_.backend_options_.at(backend_id);
    auto handle = backend->init(init);
    if (!handle.ok()) {
      return handle.status().with_context(where);
    }
    out.handle = std::move(handle).value();
    if (const auto* order = delegate->output_order()) {
      out.output_order.assign(order->begin(), order->end());
    }
    return out;
  }

  Program& program_;
  const LoadOptions& options_;
};

Program::~Program() = default;

Result<std::shared_ptr<const Program>> Program::load(const std::string& path, LoadOptions options) {
  STATICLM_ASSIGN_OR_RETURN(std::unique_ptr<ProgramFile> file, ProgramFile::open(path));
  return from_file(std::move(file), std::move(options));
}

Result<std::shared_ptr<const Program>> Program::from_file(std::shared_ptr<const ProgramFile> file,
                                                          LoadOptions options) {
  if (options.kernels == nullptr) {
    return invalid_argument("LoadOptions.kernels is required");
  }
  std::shared_ptr<Program> program(new Program());
  program->file_ = std::move(file);
  program->thread_pool_ = options.thread_pool ? options.thread_pool : std::make_shared<ThreadPool>(options.num_threads);
  program->named_data_ = std::make_unique<ProgramNamedData>(*program->file_);
  STATICLM_RETURN_IF_ERROR(Loader(*program, options).run());
  return std::shared_ptr<const Program>(std::move(program));
}

std::vector<std::string> Program::method_names() const {
  return staticlm::method_names(*file_);
}

Result<const PreparedMethod*> Program::method(std::string_view name) const {
  for (const auto& method : methods_) {
    if (method->name() == name) {
      return method.get();
    }
  }
  return not_found("program '", file_->path(), "' has no method '", name, "' (methods: ", methods_list(*file_), ")");
}

Result<std::unique_ptr<MethodSession>> Program::new_session(std::string_view name) const {
  STATICLM_ASSIGN_OR_RETURN(const PreparedMethod* prepared, method(name));
  return prepared->new_session(shared_from_this(), thread_pool_.get());
}

}  // namespace staticlm
