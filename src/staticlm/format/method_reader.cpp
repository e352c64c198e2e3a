// SPDX-License-Identifier: Apache-2.0
#include "staticlm/format/method_reader.h"

#include "staticlm/format/metadata.h"

namespace staticlm {
namespace {

Shape shape_of(const flatbuffers::Vector<int64_t>* shape) {
  return shape == nullptr ? Shape{} : Shape(shape->begin(), shape->end());
}

std::vector<IoSpec> read_io(const flatbuffers::Vector<flatbuffers::Offset<fb::IoTensor>>* io) {
  std::vector<IoSpec> out;
  if (io != nullptr) {
    for (const fb::IoTensor* tensor : *io) {
      out.push_back({tensor->name()->str(), tensor->value(), tensor->mutable_()});
    }
  }
  return out;
}

}  // namespace

Result<MethodSpec> read_method_spec(const fb::Method& method) {
  MethodSpec out;
  out.name = method.name()->str();
  out.inputs = read_io(method.inputs());
  out.outputs = read_io(method.outputs());
  if (const auto* values = method.values()) {
    out.values.reserve(values->size());
    for (const fb::Value* value : *values) {
      ValueSpec spec;
      spec.dtype = static_cast<DType>(value->dtype());
      spec.shape = shape_of(value->shape());
      spec.storage = static_cast<ValueStorage>(value->storage());
      spec.index = value->index();
      if (value->key() != nullptr) {
        spec.key = value->key()->str();
      }
      out.values.push_back(std::move(spec));
    }
  }
  if (const auto* instructions = method.instructions()) {
    out.instructions.reserve(instructions->size());
    for (const fb::InstructionEntry* entry : *instructions) {
      if (const fb::KernelCall* call = entry->instruction_as_KernelCall()) {
        KernelCallSpec spec;
        spec.op = call->op()->str();
        if (call->inputs() != nullptr) spec.inputs.assign(call->inputs()->begin(), call->inputs()->end());
        if (call->outputs() != nullptr) spec.outputs.assign(call->outputs()->begin(), call->outputs()->end());
        STATICLM_ASSIGN_OR_RETURN(spec.attributes, attributes_from_fb(call->attributes()));
        out.instructions.emplace_back(std::move(spec));
      } else if (const fb::DelegateCall* delegate = entry->instruction_as_DelegateCall()) {
        DelegateCallSpec spec;
        spec.delegate = delegate->delegate();
        if (delegate->inputs() != nullptr) spec.inputs.assign(delegate->inputs()->begin(), delegate->inputs()->end());
        if (delegate->outputs() != nullptr) {
          spec.outputs.assign(delegate->outputs()->begin(), delegate->outputs()->end());
        }
        out.instructions.emplace_back(std::move(spec));
      } else {
        return invalid_argument("method '", out.name, "': instruction ", out.instructions.size(), " has unknown type ",
                                static_cast<int>(entry->instruction_type()));
      }
    }
  }
  if (const fb::MemoryPlan* plan = method.memory_plan()) {
    out.arena_size = plan->arena_size();
    out.arena_alignment = plan->arena_alignment();
  }
  return out;
}

}  // namespace staticlm
