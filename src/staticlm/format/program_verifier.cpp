// SPDX-License-Identifier: Apache-2.0
#include "staticlm/format/program_verifier.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "staticlm/core/checked_math.h"
#include "staticlm/core/dtype.h"
#include "staticlm/format/file_header.h"

namespace staticlm {
namespace {

template <typename T>
using TableVector = flatbuffers::Vector<flatbuffers::Offset<T>>;
using Int64Vector = flatbuffers::Vector<int64_t>;

template <typename V>
uint32_t count_of(const V* vector) {
  return vector == nullptr ? 0 : vector->size();
}

// The flatbuffers verifier only checks that a scalar vector is 4-byte aligned; reading int64
// elements from a misaligned one is undefined behaviour, so a crafted file must not get there.
// (An empty vector may legitimately be misaligned: the builder does not pad for zero bytes.)
Status check_int64_vector(const Int64Vector* vector, const std::string& what) {
  if (vector != nullptr && vector->size() != 0 && reinterpret_cast<uintptr_t>(vector->data()) % alignof(int64_t) != 0) {
    return invalid_argument(what, " is not 8-byte aligned in the flatbuffer");
  }
  return ok_status();
}

std::span<const int64_t> as_span(const Int64Vector* vector) {
  if (vector == nullptr || vector->size() == 0) {
    return {};
  }
  return {vector->data(), vector->size()};
}

// Non-empty and not seen before; `noun` reads as "constant name", "metadata key", ...
Status check_name(const flatbuffers::String* name, std::unordered_set<std::string_view>& seen, const std::string& owner,
                  std::string_view noun) {
  if (name == nullptr || name->size() == 0) {
    return invalid_argument(owner, ": ", noun, " is empty");
  }
  if (!seen.insert(name->string_view()).second) {
    return invalid_argument("duplicate ", noun, " '", name->string_view(), "'");
  }
  return ok_status();
}

// The byte size of a dtype x shape read from the file, or why it has none.
Result<uint64_t> checked_tensor_bytes(uint8_t dtype_code, const Int64Vector* shape, const std::string& what) {
  const DTypeInfo* info = find_dtype(dtype_code);
  if (info == nullptr) {
    return invalid_argument(what, ": unknown dtype code ", static_cast<int>(dtype_code));
  }
  if (shape == nullptr) {
    return invalid_argument(what, ": shape is missing");
  }
  STATICLM_RETURN_IF_ERROR(check_int64_vector(shape, what + " shape"));
  auto bytes = tensor_bytes(info->dtype, as_span(shape));
  if (!bytes.ok()) {
    // Overflow is as much an inconsistency of the file as a negative dimension is.
    return invalid_argument(what, ": ", bytes.status().message());
  }
  return *bytes;
}

std::string tensor_string(uint8_t dtype_code, const Int64Vector* shape) {
  return str_cat(dtype_name(static_cast<DType>(dtype_code)), shape_string(as_span(shape)));
}

bool same_shape(const Int64Vector* a, const Int64Vector* b) {
  std::span<const int64_t> left = as_span(a);
  std::span<const int64_t> right = as_span(b);
  return left.size() == right.size() && std::equal(left.begin(), left.end(), right.begin());
}

// Checks one method against itself and its scope: a program (constants, delegates and named
// data it may refer to), or nothing, for a method blob.
class MethodVerifier {
 public:
  MethodVerifier(const fb::Method& method, const fb::Program* program,
                 const std::unordered_map<std::string_view, uint64_t>* named_data_sizes)
      : method_(method), program_(program), named_data_sizes_(named_data_sizes) {}

  Status run() const {
    const fb::Method& method = method_;
    const std::string label = str_cat("method '", method.name()->string_view(), "'");
    uint64_t arena_size = 0;
    if (const fb::MemoryPlan* plan = method.memory_plan()) {
      if (plan->arena_alignment() != 0 && !is_power_of_two(plan->arena_alignment())) {
        return invalid_argument(label, ": arena alignment ", plan->arena_alignment(), " is not a power of two");
      }
      arena_size = plan->arena_size();
    }
    STATICLM_RETURN_IF_ERROR(verify_io(method, method.inputs(), fb::StorageKind::Input, label + " input"));
    STATICLM_RETURN_IF_ERROR(verify_io(method, method.outputs(), fb::StorageKind::Output, label + " output"));
    const auto* values = method.values();
    for (uint32_t v = 0; v < count_of(values); ++v) {
      STATICLM_RETURN_IF_ERROR(verify_value(v, arena_size, label));
    }
    const auto* instructions = method.instructions();
    for (uint32_t n = 0; n < count_of(instructions); ++n) {
      STATICLM_RETURN_IF_ERROR(
          verify_instruction(*instructions->Get(n), count_of(values), str_cat(label, " instruction ", n)));
    }
    return ok_status();
  }

  // Each io tensor names a value stored as that io kind at this io position.
  Status verify_io(const fb::Method& method, const TableVector<fb::IoTensor>* io, fb::StorageKind kind,
                   const std::string& label) const {
    const uint32_t num_values = count_of(method.values());
    std::unordered_set<std::string_view> names;
    for (uint32_t i = 0; i < count_of(io); ++i) {
      const fb::IoTensor& tensor = *io->Get(i);
      STATICLM_RETURN_IF_ERROR(check_name(tensor.name(), names, str_cat(label, " ", i), label + " name"));
      const std::string what = str_cat(label, " '", tensor.name()->string_view(), "'");
      if (tensor.value() >= num_values) {
        return invalid_argument(what, " refers to value ", tensor.value(), ", the method has ", num_values, " values");
      }
      const fb::Value& value = *method.values()->Get(tensor.value());
      if (value.storage() != kind || value.index() != i) {
        return invalid_argument(what, ": value ", tensor.value(), " is not stored as ", fb::EnumNameStorageKind(kind),
                                " ", i);
      }
    }
    return ok_status();
  }

  Status verify_value(uint32_t v, uint64_t arena_size, const std::string& label) const {
    const fb::Method& method = method_;
    const fb::Value& value = *method.values()->Get(v);
    const std::string what = str_cat(label, " value ", v);
    STATICLM_ASSIGN_OR_RETURN(uint64_t bytes, checked_tensor_bytes(value.dtype(), value.shape(), what));
    switch (value.storage()) {
      case fb::StorageKind::Arena:
        if (!range_fits(value.index(), bytes, arena_size)) {
          return invalid_argument(what, ": arena offset ", value.index(), " + ", bytes,
                                  " bytes is out of range of the ", arena_size, "-byte arena");
        }
        return ok_status();
      case fb::StorageKind::Input:
      case fb::StorageKind::Output: {
        const bool is_input = value.storage() == fb::StorageKind::Input;
        const auto* io = is_input ? method.inputs() : method.outputs();
        const char* kind = is_input ? "input" : "output";
        if (value.index() >= count_of(io)) {
          return invalid_argument(what, ": ", kind, " index ", value.index(), " is out of range (the method has ",
                                  count_of(io), " ", kind, "s)");
        }
        if (io->Get(static_cast<uint32_t>(value.index()))->value() != v) {
          return invalid_argument(what, ": ", kind, " ", value.index(), " does not refer back to this value");
        }
        return ok_status();
      }
      case fb::StorageKind::Constant: {
        if (program_ == nullptr) {
          return invalid_argument(what, ": a method blob has no constants (its data comes as named data)");
        }
        const uint32_t num_constants = count_of(program_->constants());
        if (value.index() >= num_constants) {
          return invalid_argument(what, ": constant index ", value.index(), " is out of range (the program has ",
                                  num_constants, " constants)");
        }
        const fb::Constant& constant = *program_->constants()->Get(static_cast<uint32_t>(value.index()));
        if (constant.dtype() != value.dtype() || !same_shape(constant.shape(), value.shape())) {
          return invalid_argument(what, " is ", tensor_string(value.dtype(), value.shape()), " but constant '",
                                  constant.name()->string_view(), "' is ",
                                  tensor_string(constant.dtype(), constant.shape()));
        }
        return ok_status();
      }
      case fb::StorageKind::NamedData: {
        if (value.key() == nullptr || value.key()->size() == 0) {
          return invalid_argument(what, ": named data value without a key");
        }
        if (named_data_sizes_ == nullptr) {
          return ok_status();  // a blob's named data is checked when its delegate is given the data
        }
        auto entry = named_data_sizes_->find(value.key()->string_view());
        if (entry == named_data_sizes_->end()) {
          return invalid_argument(what, ": named data '", value.key()->string_view(), "' does not exist");
        }
        if (entry->second != bytes) {
          return invalid_argument(what, " is ", tensor_string(value.dtype(), value.shape()), " = ", bytes,
                                  " bytes, but named data '", value.key()->string_view(), "' holds ", entry->second);
        }
        return ok_status();
      }
    }
    return invalid_argument(what, ": unknown storage kind ", static_cast<int>(value.storage()));
  }

  Status verify_instruction(const fb::InstructionEntry& entry, uint32_t num_values, const std::string& label) const {
    if (const fb::KernelCall* call = entry.instruction_as_KernelCall()) {
      if (call->op()->size() == 0) {
        return invalid_argument(label, ": op name is empty");
      }
      const std::string what = str_cat(label, " (", call->op()->string_view(), ")");
      const auto* inputs = call->inputs();
      for (uint32_t i = 0; i < count_of(inputs); ++i) {
        const int32_t input = inputs->Get(i);
        if (input < -1 || input >= static_cast<int64_t>(num_values)) {
          return invalid_argument(what, ": input ", i, " refers to value ", input, ", the method has ", num_values,
                                  " values");
        }
      }
      STATICLM_RETURN_IF_ERROR(check_outputs(call->outputs(), num_values, what));
      std::unordered_set<std::string_view> names;
      const auto* attributes = call->attributes();
      for (uint32_t a = 0; a < count_of(attributes); ++a) {
        const fb::Attribute& attribute = *attributes->Get(a);
        STATICLM_RETURN_IF_ERROR(
            check_name(attribute.name(), names, str_cat(what, " attribute ", a), "attribute name"));
        const std::string attr_what = str_cat(what, " attribute '", attribute.name()->string_view(), "'");
        if (flatbuffers::IsOutRange(attribute.type(), fb::AttributeType::MIN, fb::AttributeType::MAX)) {
          return invalid_argument(attr_what, ": unknown type ", static_cast<int>(attribute.type()));
        }
        STATICLM_RETURN_IF_ERROR(check_int64_vector(attribute.int_list(), attr_what + " int list"));
      }
      return ok_status();
    }
    if (const fb::DelegateCall* call = entry.instruction_as_DelegateCall()) {
      const std::string what = str_cat(label, " (delegate ", call->delegate(), ")");
      if (program_ == nullptr) {
        return invalid_argument(what, ": a method blob cannot call a delegate");
      }
      const uint32_t num_delegates = count_of(program_->delegates());
      if (call->delegate() >= num_delegates) {
        return invalid_argument(what, ": delegate ", call->delegate(), " does not exist (the program has ",
                                num_delegates, " delegates)");
      }
      const auto* inputs = call->inputs();
      for (uint32_t i = 0; i < count_of(inputs); ++i) {
        if (inputs->Get(i) >= num_values) {
          return invalid_argument(what, ": input ", i, " refers to value ", inputs->Get(i), ", the method has ",
                                  num_values, " values");
        }
      }
      STATICLM_RETURN_IF_ERROR(check_outputs(call->outputs(), num_values, what));
      const auto* order = program_->delegates()->Get(call->delegate())->output_order();
      if (count_of(order) != 0 && count_of(order) != count_of(call->outputs())) {
        return invalid_argument(what, ": the delegate's output_order has ", count_of(order), " entries, the call has ",
                                count_of(call->outputs()), " outputs");
      }
      return ok_status();
    }
    return invalid_argument(label, ": unknown instruction type ", static_cast<int>(entry.instruction_type()));
  }

  static Status check_outputs(const flatbuffers::Vector<uint32_t>* outputs, uint32_t num_values,
                              const std::string& what) {
    for (uint32_t i = 0; i < count_of(outputs); ++i) {
      if (outputs->Get(i) >= num_values) {
        return invalid_argument(what, ": output ", i, " refers to value ", outputs->Get(i), ", the method has ",
                                num_values, " values");
      }
    }
    return ok_status();
  }

  const fb::Method& method_;
  const fb::Program* program_;                                              // null for a method blob
  const std::unordered_map<std::string_view, uint64_t>* named_data_sizes_;  // null for a method blob
};

class SemanticVerifier {
 public:
  SemanticVerifier(const fb::Program& program, uint64_t data_size) : program_(program), data_size_(data_size) {}

  Status run() {
    STATICLM_RETURN_IF_ERROR(verify_segments());
    STATICLM_RETURN_IF_ERROR(verify_metadata());
    STATICLM_RETURN_IF_ERROR(verify_constants());
    STATICLM_RETURN_IF_ERROR(verify_delegates());
    STATICLM_RETURN_IF_ERROR(verify_files());
    STATICLM_RETURN_IF_ERROR(verify_named_data());
    std::unordered_set<std::string_view> names;
    const auto* methods = program_.methods();
    for (uint32_t m = 0; m < count_of(methods); ++m) {
      const fb::Method& method = *methods->Get(m);
      STATICLM_RETURN_IF_ERROR(check_name(method.name(), names, str_cat("method ", m), "method name"));
      STATICLM_RETURN_IF_ERROR(MethodVerifier(method, &program_, &named_data_sizes_).run());
    }
    return ok_status();
  }

 private:
  Status verify_segments() const {
    const auto* segments = program_.segments();
    for (uint32_t s = 0; s < count_of(segments); ++s) {
      const fb::Segment& segment = *segments->Get(s);
      if (!is_power_of_two(segment.alignment())) {
        return invalid_argument("segment ", s, ": alignment ", segment.alignment(), " is not a power of two");
      }
      if (segment.offset() % segment.alignment() != 0) {
        return invalid_argument("segment ", s, ": offset ", segment.offset(), " is not a multiple of its alignment ",
                                segment.alignment());
      }
      if (!range_fits(segment.offset(), segment.size(), data_size_)) {
        return invalid_argument("segment ", s, " (offset ", segment.offset(), ", ", segment.size(),
                                " bytes) is out of range: the data area holds ", data_size_, " bytes");
      }
    }
    return ok_status();
  }

  Status check_segment_index(uint32_t segment, const std::string& what) const {
    const uint32_t count = count_of(program_.segments());
    if (segment >= count) {
      return invalid_argument(what, ": segment ", segment, " does not exist (the program has ", count, " segments)");
    }
    return ok_status();
  }

  Status verify_metadata() const {
    std::unordered_set<std::string_view> keys;
    const auto* metadata = program_.metadata();
    for (uint32_t i = 0; i < count_of(metadata); ++i) {
      const fb::MetadataEntry& entry = *metadata->Get(i);
      STATICLM_RETURN_IF_ERROR(check_name(entry.key(), keys, str_cat("metadata entry ", i), "metadata key"));
      const std::string what = str_cat("metadata '", entry.key()->string_view(), "'");
      if (flatbuffers::IsOutRange(entry.type(), fb::MetadataType::MIN, fb::MetadataType::MAX)) {
        return invalid_argument(what, ": unknown type ", static_cast<int>(entry.type()));
      }
      STATICLM_RETURN_IF_ERROR(check_int64_vector(entry.int_list(), what + " int list"));
    }
    return ok_status();
  }

  Status verify_constants() const {
    std::unordered_set<std::string_view> names;
    const auto* constants = program_.constants();
    for (uint32_t c = 0; c < count_of(constants); ++c) {
      const fb::Constant& constant = *constants->Get(c);
      STATICLM_RETURN_IF_ERROR(check_name(constant.name(), names, str_cat("constant ", c), "constant name"));
      const std::string what = str_cat("constant '", constant.name()->string_view(), "'");
      STATICLM_ASSIGN_OR_RETURN(uint64_t bytes, checked_tensor_bytes(constant.dtype(), constant.shape(), what));
      if (constant.size() != bytes) {
        return invalid_argument(what, ": size ", constant.size(),
                                " != ", tensor_string(constant.dtype(), constant.shape()), " = ", bytes, " bytes");
      }
      STATICLM_RETURN_IF_ERROR(check_segment_index(constant.segment(), what));
      const fb::Segment& segment = *program_.segments()->Get(constant.segment());
      if (!range_fits(constant.offset(), constant.size(), segment.size())) {
        return invalid_argument(what, ": offset ", constant.offset(), " + size ", constant.size(),
                                " is out of range of segment ", constant.segment(), " (", segment.size(), " bytes)");
      }
      // Cannot overflow: the constant lies inside the segment, which lies inside the data area.
      const uint64_t data_offset = segment.offset() + constant.offset();
      if (data_offset % kSegmentAlignment != 0) {
        return invalid_argument(what, ": data at data-area offset ", data_offset, " is not ", kSegmentAlignment,
                                "-byte aligned");
      }
    }
    return ok_status();
  }

  Status verify_delegates() const {
    const auto* delegates = program_.delegates();
    for (uint32_t d = 0; d < count_of(delegates); ++d) {
      const fb::Delegate& delegate = *delegates->Get(d);
      const std::string what = str_cat("delegate ", d);
      if (delegate.backend_id() == nullptr || delegate.backend_id()->size() == 0) {
        return invalid_argument(what, ": backend_id is empty");
      }
      STATICLM_RETURN_IF_ERROR(check_segment_index(delegate.blob_segment(), what + " blob"));
      std::unordered_set<std::string_view> keys;
      const auto* specs = delegate.compile_specs();
      for (uint32_t i = 0; i < count_of(specs); ++i) {
        STATICLM_RETURN_IF_ERROR(
            check_name(specs->Get(i)->key(), keys, str_cat(what, " compile spec ", i), "compile spec key"));
      }
      // A permutation of [0, n): every entry below n and none repeated.
      const auto* order = delegate.output_order();
      const uint32_t n = count_of(order);
      std::vector<bool> seen(n, false);
      for (uint32_t i = 0; i < n; ++i) {
        const uint32_t position = order->Get(i);
        if (position >= n || seen[position]) {
          return invalid_argument(what, ": output_order is not a permutation of [0, ", n, ") (entry ", i, " is ",
                                  position, ")");
        }
        seen[position] = true;
      }
    }
    return ok_status();
  }

  Status verify_files() const {
    std::unordered_set<std::string_view> names;
    const auto* files = program_.files();
    for (uint32_t f = 0; f < count_of(files); ++f) {
      const fb::EmbeddedFile& file = *files->Get(f);
      STATICLM_RETURN_IF_ERROR(check_name(file.name(), names, str_cat("embedded file ", f), "embedded file name"));
      STATICLM_RETURN_IF_ERROR(
          check_segment_index(file.segment(), str_cat("embedded file '", file.name()->string_view(), "'")));
    }
    return ok_status();
  }

  Status verify_named_data() {
    const auto* entries = program_.named_data();
    std::unordered_set<std::string_view> keys;
    for (uint32_t n = 0; n < count_of(entries); ++n) {
      const fb::NamedData& entry = *entries->Get(n);
      STATICLM_RETURN_IF_ERROR(check_name(entry.key(), keys, str_cat("named data ", n), "named data key"));
      const std::string what = str_cat("named data '", entry.key()->string_view(), "'");
      STATICLM_RETURN_IF_ERROR(check_segment_index(entry.segment(), what));
      named_data_sizes_.emplace(entry.key()->string_view(), program_.segments()->Get(entry.segment())->size());
    }
    return ok_status();
  }

  const fb::Program& program_;
  uint64_t data_size_;
  std::unordered_map<std::string_view, uint64_t> named_data_sizes_;
};

}  // namespace

Status verify_program_semantics(const fb::Program& program, uint64_t data_size) {
  return SemanticVerifier(program, data_size).run();
}

Status verify_method_blob_semantics(const fb::Method& method) {
  return MethodVerifier(method, nullptr, nullptr).run();
}

}  // namespace staticlm
