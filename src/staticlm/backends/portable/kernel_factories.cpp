// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/portable/kernel_factories.h"

#include <string>

#include "staticlm/backends/portable/element_access.h"

namespace staticlm::portable {

Status check_signature(const KernelSignature& signature, size_t min_inputs, int max_inputs) {
  const std::string_view op = op_name(signature.op);
  const size_t count = signature.inputs.size();
  if (count < min_inputs || (max_inputs >= 0 && count > static_cast<size_t>(max_inputs))) {
    return invalid_argument(op, ": expected ", min_inputs, max_inputs < 0 ? " or more" : " to ",
                            max_inputs < 0 ? "" : std::to_string(max_inputs), " inputs, found ", count);
  }
  for (size_t i = 0; i < min_inputs; ++i) {
    if (signature.inputs[i] == nullptr) {
      return invalid_argument(op, ": required input ", i, " is absent");
    }
  }
  if (signature.outputs.size() != 1) {
    return invalid_argument(op, ": expected 1 output, found ", signature.outputs.size());
  }
  return ok_status();
}

Result<size_t> read_axis(const KernelSignature& signature, std::string_view name, std::optional<int64_t> fallback,
                         size_t rank) {
  auto axis = fallback ? signature.attributes.get_int_or(name, *fallback) : signature.attributes.get_int(name);
  if (!axis.ok()) {
    return axis.status().with_context(op_name(signature.op));
  }
  const auto signed_rank = static_cast<int64_t>(rank);
  if (*axis < -signed_rank || *axis >= signed_rank) {
    return invalid_argument(op_name(signature.op), ": attribute '", name, "': axis ", *axis,
                            " is out of range for rank ", rank);
  }
  return static_cast<size_t>(*axis < 0 ? *axis + signed_rank : *axis);
}

Status check_float_weight(const KernelSignature& signature, const TensorSpec& input, std::string_view role) {
  if (!is_float_weight_dtype(input.dtype)) {
    return unimplemented(op_name(signature.op), ": ", role, " dtype ", dtype_name(input.dtype),
                         " is not supported by the portable backend (expected f32, f16 or bf16)");
  }
  return ok_status();
}

Status check_matrix_weight(const KernelSignature& signature, const TensorSpec& input, std::string_view role) {
  if (!is_matrix_weight_dtype(input.dtype)) {
    return unimplemented(op_name(signature.op), ": ", role, " dtype ", dtype_name(input.dtype),
                         " is not supported by the portable backend (expected f32, f16, bf16, q8_0 or q4_0)");
  }
  return ok_status();
}

Result<MatrixRef> matrix_input(const KernelSignature& signature, int64_t matrix, const TensorSpec& input,
                               std::string_view role) {
  auto panels = matrix_layout(signature.attributes, matrix, input);
  if (!panels.ok()) {
    return panels.status().with_context(str_cat(op_name(signature.op), " ", role));
  }
  // Quantized panels are u8, a dtype no other layout takes.
  if (!*panels || !(*panels)->is_quantized()) {
    STATICLM_RETURN_IF_ERROR(check_matrix_weight(signature, input, role));
  }
  MatrixRef ref;
  ref.dtype = input.dtype;
  ref.panels = *panels;
  if (ref.panels) {
    ref.rows = ref.panels->rows;
    ref.cols = ref.panels->cols;
  } else if (input.shape.size() == 2) {
    ref.rows = input.shape[0];
    ref.cols = input.shape[1];
  } else {
    return invalid_argument(op_name(signature.op), ": expected a [rows, cols] ", role, ", found ",
                            shape_string(input.shape));
  }
  return ref;
}

Status check_plain_dtype(const KernelSignature& signature, DType dtype) {
  if (dtype_info(dtype).is_quantized) {
    return unimplemented(op_name(signature.op), ": block-quantized dtype ", dtype_name(dtype),
                         " is not supported by the portable backend");
  }
  return ok_status();
}

}  // namespace staticlm::portable
