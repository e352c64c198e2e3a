// read_cpu_blob (cpu_blob.h): the blob is untrusted, so everything is checked here, once.
#include <set>

#include "staticlm/backends/cpu/cpu_blob.h"
#include "staticlm/backends/cpu/cpu_delegate_generated.h"
#include "staticlm/core/checked_math.h"
#include "staticlm/format/metadata.h"

namespace staticlm {
namespace {

constexpr uint32_t kMaxArenaAlignment = 4096;

// The flatbuffers verifier checks a vector's length field, not that 8-byte elements are 8-byte
// aligned; a crafted blob could make reading a shape or an int list a misaligned load.
Status check_aligned(const flatbuffers::Vector<int64_t>* vector, const std::string& what) {
  if (vector != nullptr && vector->size() != 0 && reinterpret_cast<uintptr_t>(vector->data()) % alignof(int64_t) != 0) {
    return invalid_argument(what, " is not 8-byte aligned in the blob");
  }
  return ok_status();
}

class BlobChecker {
 public:
  BlobChecker(const cpu::fb::Delegate& delegate, std::span<const TensorSpec> call_inputs)
      : delegate_(delegate), call_inputs_(call_inputs) {}

  Result<CpuPlan> run() {
    if (delegate_.version() != kCpuBlobVersion) {
      return invalid_argument("cpu delegate blob: version ", delegate_.version(), ", this build reads version ",
                              kCpuBlobVersion);
    }
    plan_.arena_size = delegate_.arena_size();
    plan_.arena_alignment = delegate_.arena_alignment();
    if (!is_power_of_two(plan_.arena_alignment) || plan_.arena_alignment < 16 ||
        plan_.arena_alignment > kMaxArenaAlignment) {
      return invalid_argument("cpu delegate blob: arena alignment ", plan_.arena_alignment,
                              " is not a power of two in [16, ", kMaxArenaAlignment, "]");
    }
    STATICLM_RETURN_IF_ERROR(read_values());
    STATICLM_RETURN_IF_ERROR(read_nodes());
    STATICLM_RETURN_IF_ERROR(check_arena_size());
    return std::move(plan_);
  }

 private:
  Status read_values() {
    const auto* values = delegate_.values();
    const uint32_t count = values == nullptr ? 0 : values->size();
    std::vector<int64_t> input_value(call_inputs_.size(), -1);
    std::vector<int64_t> output_value;
    for (uint32_t v = 0; v < count; ++v) {
      const cpu::fb::Value& value = *values->Get(v);
      const std::string what = str_cat("cpu delegate blob: value ", v);
      const DTypeInfo* dtype = find_dtype(value.dtype());
      if (dtype == nullptr) {
        return invalid_argument(what, ": unknown dtype code ", static_cast<int>(value.dtype()));
      }
      CpuValue out;
      out.spec.dtype = dtype->dtype;
      STATICLM_RETURN_IF_ERROR(check_aligned(value.shape(), what + " shape"));
      if (value.shape() != nullptr) {
        out.spec.shape.assign(value.shape()->begin(), value.shape()->end());
      }
      auto bytes = tensor_bytes(out.spec.dtype, out.spec.shape);
      if (!bytes.ok()) {
        return bytes.status().with_context(what);
      }
      out.index = value.index();
      switch (value.storage()) {
        case cpu::fb::Storage::Input:
          out.storage = CpuValueStorage::kInput;
          if (out.index >= call_inputs_.size() || input_value[out.index] >= 0) {
            return invalid_argument(what, ": input index ", out.index, " is out of range or taken (the call passes ",
                                    call_inputs_.size(), " inputs)");
          }
          if (call_inputs_[out.index] != out.spec) {
            const TensorSpec& passed = call_inputs_[out.index];
            return invalid_argument(what, ": declares input ", out.index, " as ", dtype_name(out.spec.dtype),
                                    shape_string(out.spec.shape), ", the call passes ", dtype_name(passed.dtype),
                                    shape_string(passed.shape));
          }
          input_value[out.index] = v;
          break;
        case cpu::fb::Storage::Output:
          out.storage = CpuValueStorage::kOutput;
          if (out.index >= count) {
            return invalid_argument(what, ": output index ", out.index, " is out of range");
          }
          if (output_value.size() <= out.index) {
            output_value.resize(out.index + 1, -1);
          }
          if (output_value[out.index] >= 0) {
            return invalid_argument(what, ": output index ", out.index, " is taken by value ", output_value[out.index]);
          }
          output_value[out.index] = v;
          break;
        case cpu::fb::Storage::Arena:
          out.storage = CpuValueStorage::kArena;
          if (!range_fits(out.index, *bytes, plan_.arena_size) || out.index % plan_.arena_alignment != 0) {
            return invalid_argument(what, ": arena slice [", out.index, ", +", *bytes, ") is outside the ",
                                    plan_.arena_size, "-byte arena or not ", plan_.arena_alignment, "-byte aligned");
          }
          break;
        default: return invalid_argument(what, ": unknown storage ", static_cast<int>(value.storage()));
      }
      plan_.values.push_back(std::move(out));
    }
    for (size_t i = 0; i < input_value.size(); ++i) {
      if (input_value[i] < 0) {
        return invalid_argument("cpu delegate blob: no value for call input ", i);
      }
    }
    for (size_t i = 0; i < output_value.size(); ++i) {
      if (output_value[i] < 0) {
        return invalid_argument("cpu delegate blob: no value for output ", i);
      }
      plan_.output_specs.push_back(plan_.values[static_cast<size_t>(output_value[i])].spec);
      output_values_.push_back(static_cast<uint32_t>(output_value[i]));
    }
    return ok_status();
  }

  Status read_nodes() {
    const auto* nodes = delegate_.nodes();
    const uint32_t count = nodes == nullptr ? 0 : nodes->size();
    const size_t num_values = plan_.values.size();
    std::vector<bool> defined(num_values, false);
    for (size_t v = 0; v < num_values; ++v) {
      defined[v] = plan_.values[v].storage == CpuValueStorage::kInput;
    }
    std::set<uint32_t> updated;
    for (uint32_t n = 0; n < count; ++n) {
      const cpu::fb::Node& node = *nodes->Get(n);
      auto op = find_op(node.op()->string_view());
      if (!op.ok()) {
        return op.status().with_context(str_cat("cpu delegate blob: node ", n));
      }
      const std::string what = str_cat("cpu delegate blob: node ", n, " (", op_name(*op), ")");
      CpuNode out;
      out.op = *op;
      if (node.inputs() != nullptr) out.inputs.assign(node.inputs()->begin(), node.inputs()->end());
      if (node.outputs() != nullptr) out.outputs.assign(node.outputs()->begin(), node.outputs()->end());
      if (node.attributes() != nullptr) {
        for (const staticlm::fb::Attribute* attribute : *node.attributes()) {
          STATICLM_RETURN_IF_ERROR(check_aligned(attribute->int_list(), what + " attribute int list"));
        }
      }
      auto attributes = attributes_from_fb(node.attributes());
      if (!attributes.ok()) {
        return attributes.status().with_context(what);
      }
      out.attributes = std::move(attributes).value();

      std::vector<const TensorSpec*> input_specs;
      for (int32_t input : out.inputs) {
        if (input < -1 || input >= static_cast<int64_t>(num_values)) {
          return invalid_argument(what, ": input value ", input, " is out of range (", num_values, " values)");
        }
        if (input >= 0 && !defined[static_cast<size_t>(input)]) {
          return invalid_argument(what, ": reads value ", input, " before any node writes it");
        }
        input_specs.push_back(input < 0 ? nullptr : &plan_.values[static_cast<size_t>(input)].spec);
      }
      auto inferred = infer_outputs(out.op, input_specs, out.attributes);
      if (!inferred.ok()) {
        return inferred.status().with_context(what);
      }
      if (inferred->size() != out.outputs.size()) {
        return invalid_argument(what, ": expected ", inferred->size(), " outputs, found ", out.outputs.size());
      }
      const int in_place = in_place_input(out.op, out.attributes);
      for (size_t i = 0; i < out.outputs.size(); ++i) {
        const uint32_t output = out.outputs[i];
        if (output >= num_values) {
          return invalid_argument(what, ": output value ", output, " is out of range (", num_values, " values)");
        }
        const CpuValue& value = plan_.values[output];
        if (value.spec != (*inferred)[i]) {
          return invalid_argument(what, ": output ", i, " is declared ", dtype_name(value.spec.dtype),
                                  shape_string(value.spec.shape), " but the op produces ",
                                  dtype_name((*inferred)[i].dtype), shape_string((*inferred)[i].shape));
        }
        const bool aliases = in_place >= 0 && i == 0;
        if (aliases && static_cast<int64_t>(output) != out.inputs[static_cast<size_t>(in_place)]) {
          return invalid_argument(what, ": updates input ", in_place, " in place, so output 0 must be value ",
                                  out.inputs[static_cast<size_t>(in_place)], ", found value ", output);
        }
        if (!aliases) {
          for (int32_t input : out.inputs) {
            if (input == static_cast<int64_t>(output)) {
              return invalid_argument(what, ": output ", i, " is also one of its inputs");
            }
          }
          if (value.storage == CpuValueStorage::kInput) {
            return invalid_argument(what, ": writes value ", output, ", a delegate input it does not update in place");
          }
        } else if (value.storage == CpuValueStorage::kInput) {
          updated.insert(static_cast<uint32_t>(value.index));
        }
        defined[output] = true;
      }
      plan_.nodes.push_back(std::move(out));
    }
    for (size_t i = 0; i < output_values_.size(); ++i) {
      if (!defined[output_values_[i]]) {
        return invalid_argument("cpu delegate blob: output ", i, " (value ", output_values_[i], ") is never written");
      }
    }
    plan_.updated_inputs.assign(updated.begin(), updated.end());
    return ok_status();
  }

  // An honest plan never needs more arena than its written values side by side, so a larger
  // arena_size (which would be allocated at init) is refused.
  Status check_arena_size() const {
    uint64_t needed = 0;
    std::set<uint32_t> counted;
    for (const CpuNode& node : plan_.nodes) {
      for (uint32_t output : node.outputs) {
        const CpuValue& value = plan_.values[output];
        if (value.storage != CpuValueStorage::kArena || !counted.insert(output).second) {
          continue;
        }
        const uint64_t bytes = *tensor_bytes(value.spec.dtype, value.spec.shape);  // checked in read_values
        auto aligned = checked_align_up(bytes, plan_.arena_alignment);
        auto sum = aligned ? checked_add(needed, *aligned) : std::nullopt;
        if (!sum) {
          return invalid_argument("cpu delegate blob: the arena values' sizes overflow 64 bits");
        }
        needed = *sum;
      }
    }
    if (plan_.arena_size > needed) {
      return invalid_argument("cpu delegate blob: arena_size ", plan_.arena_size, " exceeds the ", needed,
                              " bytes its values need");
    }
    return ok_status();
  }

  const cpu::fb::Delegate& delegate_;
  std::span<const TensorSpec> call_inputs_;
  std::vector<uint32_t> output_values_;
  CpuPlan plan_;
};

}  // namespace

Result<CpuPlan> read_cpu_blob(std::span<const uint8_t> blob, std::span<const TensorSpec> call_inputs) {
  if (reinterpret_cast<uintptr_t>(blob.data()) % alignof(int64_t) != 0) {
    return invalid_argument("cpu delegate blob: not 8-byte aligned in memory (program segments are)");
  }
  flatbuffers::Verifier verifier(blob.data(), blob.size());
  if (blob.size() < 8 || !cpu::fb::DelegateBufferHasIdentifier(blob.data())) {
    return data_loss("cpu delegate blob: not a cpu delegate blob (", blob.size(), " bytes, identifier missing)");
  }
  if (!cpu::fb::VerifyDelegateBuffer(verifier)) {
    return data_loss("cpu delegate blob: the flatbuffer is corrupt (", blob.size(), " bytes)");
  }
  return BlobChecker(*cpu::fb::GetDelegate(blob.data()), call_inputs).run();
}

}  // namespace staticlm
