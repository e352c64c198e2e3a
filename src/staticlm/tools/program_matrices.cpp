// SPDX-License-Identifier: Apache-2.0
#include "staticlm/tools/program_matrices.h"

#include <algorithm>
#include <map>
#include <variant>

#include "staticlm/format/method_blob.h"
#include "staticlm/format/method_reader.h"
#include "staticlm/ops/op_set.h"
#include "staticlm/ops/weight_format.h"
#include "staticlm/ops/weight_layout.h"

namespace staticlm::cli {
namespace {

void add_matrices(const fb::Program& program, const MethodSpec& method,
                  std::map<std::string, ProgramMatrix>& matrices) {
  for (const InstructionSpec& instruction : method.instructions) {
    const KernelCallSpec* call = std::get_if<KernelCallSpec>(&instruction);
    if (call == nullptr) {
      continue;
    }
    const Result<OpKind> op = find_op(call->op);
    if (!op.ok()) {
      continue;
    }
    const std::vector<size_t> inputs = matrix_inputs(*op, call->inputs.size(), call->attributes);
    for (size_t m = 0; m < inputs.size(); ++m) {
      const int32_t index = call->inputs[inputs[m]];
      if (index < 0 || static_cast<size_t>(index) >= method.values.size()) {
        continue;
      }
      const ValueSpec& value = method.values[static_cast<size_t>(index)];
      std::string name;
      if (value.storage == ValueStorage::kNamedData) {
        name = value.key;
      } else if (value.storage == ValueStorage::kConstant && program.constants() != nullptr &&
                 value.index < program.constants()->size()) {
        name = program.constants()->Get(static_cast<flatbuffers::uoffset_t>(value.index))->name()->str();
      } else {
        continue;
      }
      const TensorSpec spec{value.dtype, value.shape};
      const auto layout = matrix_layout(call->attributes, static_cast<int64_t>(m), spec);
      const auto bytes = tensor_bytes(value.dtype, value.shape);
      if (!layout.ok() || !bytes.ok()) {
        continue;
      }
      ProgramMatrix& entry = matrices[name];
      if (entry.name.empty()) {
        entry.name = name;
        entry.shape = value.shape;
        entry.layout = std::string(kRowsLayout);
        entry.format = std::string(dtype_name(value.dtype));
        entry.bytes = *bytes;
        if (*layout) {
          const PanelLayout& panels = **layout;
          entry.shape = {panels.rows, panels.cols};
          entry.layout = std::string(panel_layout_name(panels.codes));
          if (panels.is_quantized()) {
            entry.format = WeightFormat::quantized(panels.codes, panels.group).name();
          }
        }
      }
      if (std::find(entry.read_by.begin(), entry.read_by.end(), call->op) == entry.read_by.end()) {
        entry.read_by.push_back(call->op);
      }
      // Every linear kind takes x first, [..., K].
      const int32_t x = call->inputs.empty() ? -1 : call->inputs[0];
      if (*op != OpKind::kEmbedding && x >= 0 && static_cast<size_t>(x) < method.values.size() &&
          entry.shape.size() == 2 && entry.shape[1] > 0) {
        entry.rows = std::max(entry.rows, num_elements(method.values[static_cast<size_t>(x)].shape) / entry.shape[1]);
      }
    }
  }
}

}  // namespace

double ProgramMatrix::bits_per_weight() const {
  const auto weights = static_cast<double>(num_elements(shape));
  return weights > 0 ? 8.0 * static_cast<double>(bytes) / weights : 0.0;
}

bool ProgramMatrix::gathered_only() const {
  return std::all_of(read_by.begin(), read_by.end(), [](const std::string& op) { return op == "embedding"; });
}

std::vector<ProgramMatrix> program_matrices(const ProgramFile& file) {
  const fb::Program& program = file.program();
  std::map<std::string, ProgramMatrix> matrices;
  if (program.methods() != nullptr) {
    for (const fb::Method* method : *program.methods()) {
      if (auto spec = read_method_spec(*method); spec.ok()) {
        add_matrices(program, *spec, matrices);
      }
    }
  }
  if (program.delegates() != nullptr) {
    for (const fb::Delegate* delegate : *program.delegates()) {
      auto blob = read_method_blob(file.segment(delegate->blob_segment()));
      if (!blob.ok()) {
        continue;
      }
      if (auto spec = read_method_spec(**blob); spec.ok()) {
        add_matrices(program, *spec, matrices);
      }
    }
  }
  std::vector<ProgramMatrix> list;
  for (auto& [name, matrix] : matrices) {
    list.push_back(std::move(matrix));
  }
  return list;
}

uint64_t program_weight_bytes(const ProgramFile& file) {
  const fb::Program& program = file.program();
  uint64_t bytes = 0;
  if (program.constants() != nullptr) {
    for (const fb::Constant* constant : *program.constants()) {
      bytes += constant->size();
    }
  }
  if (program.named_data() != nullptr) {
    for (const fb::NamedData* entry : *program.named_data()) {
      bytes += file.segment(entry->segment()).size();
    }
  }
  return bytes;
}

uint64_t program_cache_bytes(const ProgramFile& file) {
  std::map<std::string, uint64_t> in_place;
  if (file.program().methods() != nullptr) {
    for (const fb::Method* method : *file.program().methods()) {
      if (method->inputs() == nullptr) {
        continue;
      }
      for (const fb::IoTensor* tensor : *method->inputs()) {
        if (tensor->mutable_()) {
          const fb::Value& value = *method->values()->Get(tensor->value());
          const Shape shape(value.shape()->begin(), value.shape()->end());
          auto bytes = tensor_bytes(static_cast<DType>(value.dtype()), shape);
          in_place[tensor->name()->str()] = bytes.ok() ? *bytes : 0;
        }
      }
    }
  }
  uint64_t total = 0;
  for (const auto& [name, bytes] : in_place) {
    total += bytes;
  }
  return total;
}

}  // namespace staticlm::cli
