// SPDX-License-Identifier: Apache-2.0
#include "staticlm/format/method_builder.h"

namespace staticlm {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

namespace {

Offset<fb::Attribute> build_attribute(FlatBufferBuilder& builder, const std::string& name, const AttrValue& value) {
  auto name_offset = builder.CreateString(name);
  Offset<flatbuffers::String> string_value;
  Offset<flatbuffers::Vector<int64_t>> int_list;
  fb::AttributeType type = fb::AttributeType::Int;
  int64_t int_value = 0;
  double float_value = 0.0;
  if (const auto* as_int = std::get_if<int64_t>(&value)) {
    int_value = *as_int;
  } else if (const auto* as_float = std::get_if<double>(&value)) {
    type = fb::AttributeType::Float;
    float_value = *as_float;
  } else if (const auto* as_string = std::get_if<std::string>(&value)) {
    type = fb::AttributeType::String;
    string_value = builder.CreateString(*as_string);
  } else if (const auto* as_list = std::get_if<std::vector<int64_t>>(&value)) {
    type = fb::AttributeType::IntList;
    int_list = builder.CreateVector(*as_list);
  }
  return fb::CreateAttribute(builder, name_offset, type, int_value, float_value, string_value, int_list);
}

Offset<fb::InstructionEntry> build_instruction(FlatBufferBuilder& builder, const InstructionSpec& instruction) {
  if (const auto* call = std::get_if<KernelCallSpec>(&instruction)) {
    auto op = builder.CreateString(call->op);
    auto inputs = builder.CreateVector(call->inputs);
    auto outputs = builder.CreateVector(call->outputs);
    std::vector<Offset<fb::Attribute>> attributes;
    for (const auto& [name, value] : call->attributes.entries()) {
      attributes.push_back(build_attribute(builder, name, value));
    }
    auto kernel = fb::CreateKernelCall(builder, op, inputs, outputs, builder.CreateVector(attributes));
    return fb::CreateInstructionEntry(builder, fb::Instruction::KernelCall, kernel.Union());
  }
  const auto& call = std::get<DelegateCallSpec>(instruction);
  auto inputs = builder.CreateVector(call.inputs);
  auto outputs = builder.CreateVector(call.outputs);
  auto delegate = fb::CreateDelegateCall(builder, call.delegate, inputs, outputs);
  return fb::CreateInstructionEntry(builder, fb::Instruction::DelegateCall, delegate.Union());
}

Offset<flatbuffers::Vector<Offset<fb::IoTensor>>> build_io(FlatBufferBuilder& builder, const std::vector<IoSpec>& io) {
  std::vector<Offset<fb::IoTensor>> out;
  for (const IoSpec& tensor : io) {
    out.push_back(fb::CreateIoTensor(builder, builder.CreateString(tensor.name), tensor.value, tensor.is_mutable));
  }
  return builder.CreateVector(out);
}

}  // namespace

Offset<fb::Method> build_method(FlatBufferBuilder& builder, const MethodSpec& method) {
  auto name = builder.CreateString(method.name);
  auto inputs = build_io(builder, method.inputs);
  auto outputs = build_io(builder, method.outputs);
  std::vector<Offset<fb::Value>> values;
  for (const ValueSpec& value : method.values) {
    auto key =
        value.storage == ValueStorage::kNamedData ? builder.CreateString(value.key) : Offset<flatbuffers::String>();
    values.push_back(fb::CreateValue(builder, static_cast<uint8_t>(value.dtype), builder.CreateVector(value.shape),
                                     static_cast<fb::StorageKind>(value.storage), value.index, key));
  }
  auto values_offset = builder.CreateVector(values);
  std::vector<Offset<fb::InstructionEntry>> instructions;
  for (const InstructionSpec& instruction : method.instructions) {
    instructions.push_back(build_instruction(builder, instruction));
  }
  auto instructions_offset = builder.CreateVector(instructions);
  auto plan = fb::CreateMemoryPlan(builder, method.arena_size, method.arena_alignment);
  return fb::CreateMethod(builder, name, inputs, outputs, values_offset, instructions_offset, plan);
}

}  // namespace staticlm
