// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/cpu/kernels/linear_parts.h"

#include <algorithm>
#include <optional>

#include "staticlm/core/float_convert.h"
#include "staticlm/ops/weight_layout.h"

namespace staticlm::cpu {
namespace {

// Roughly how many multiply-adds a range should hold before it is worth a thread.
constexpr int64_t kMinRangeWork = 1 << 15;
// Rows of x a thread quantizes at least: a few microseconds of work.
constexpr int64_t kQuantizeMinRows = 4;
// From this many items per thread on, the last one's wait is small enough to leave.
constexpr int64_t kBalancedItemsPerThread = 8;

}  // namespace

float* thread_scratch() {
  alignas(64) static thread_local float scratch[kLinearScratchFloats];
  return scratch;
}

CallRows call_rows(const float* x, const LinearOperands& shape, const KernelContext& context,
                   const LinearEntryPoints& entry_points) {
  const int64_t rows = shape.rows;
  const int64_t inner = shape.inner;
  const Bf16Rounding& rounding = entry_points.bf16;
  CallRows call{rows, 0, x, nullptr};
  call.block_rows = entry_points.float_block_rows;
  if (rows == context.chunk_rows && context.padding_rows > 0) {
    call.padding = std::min(context.padding_rows, rows);
    call.rows = rows - call.padding;
    call.x = x + call.padding * inner;
  }
  if (rounding.round != nullptr && call.rows >= rounding.min_rows) {
    thread_local std::vector<uint16_t> rounded;
    rounded.resize(static_cast<size_t>(call.rows * inner));
    rounding.round(call.x, call.rows * inner, rounded.data());
    call.block_rows = rounding.block_rows;
    call.x_bf16 = rounded.data();
  }
  if (shape.codes != PanelCodes::kFloat && call.rows > 0) {
    // Split over the pool: on one thread a chunk's quantization (scalar rounding) is a visible
    // share of an int4 prefill (`staticlm bench --ops`), with the other thread waiting for it as
    // long. The buffers are the calling thread's, named by reference: in the body a thread_local
    // would be the worker's.
    thread_local QuantizedRows quantized;
    QuantizedRows& target = quantized;
    size_rows(call.rows, inner, shape.group, target);
    const float* rows_x = call.x;
    const QuantizeGroupFn quantize_group = entry_points.quantize_group;
    context.thread_pool->parallel_for(call.rows, kQuantizeMinRows, [&](int64_t first, int64_t last) {
      quantize_row_range(rows_x, inner, first, last, target, quantize_group);
    });
    call.x_quantized = &target;
  }
  return call;
}

LinearOperands bind_part(const Part& part, const CallRows& call, std::span<const TensorView> inputs,
                         const TensorView& output) {
  LinearOperands op = part.shape;
  op.rows = call.rows;
  op.x = call.x;
  op.x_bf16 = call.x_bf16;
  op.x_quantized = call.x_quantized;
  op.weight = inputs[part.weight_input].raw();
  op.bias = part.bias_input >= 0 ? inputs[static_cast<size_t>(part.bias_input)].raw() : nullptr;
  op.out = output.data<float>() + call.padding * op.columns;
  return op;
}

int64_t item_columns(const LinearOperands& shape, const LinearEntryPoints& entry_points) {
  if (shape.codes != PanelCodes::kFloat) {
    return kPanelColumns;
  }
  return (shape.rows > 1 ? entry_points.gemm_panels : 1) * kPanelColumns;
}

int64_t items_of(int64_t columns, int64_t item_columns) {
  return (columns + item_columns - 1) / item_columns;
}

int64_t items_per_range(int64_t items, int64_t rows, int64_t item_work, int threads) {
  if (rows == 1) {
    return (items + threads - 1) / std::max(1, threads);
  }
  return std::max<int64_t>(1, kMinRangeWork / std::max<int64_t>(1, item_work));
}

int64_t row_slices(int64_t items, int64_t rows, int threads, int64_t block_rows) {
  if (block_rows <= 0 || threads <= 1 || items % threads == 0 || items >= kBalancedItemsPerThread * threads ||
      rows < 2 * block_rows * threads) {
    return 1;
  }
  return threads;
}

int64_t slice_start(int64_t rows, int64_t slices, int64_t slice, int64_t block_rows) {
  if (slice >= slices) {
    return rows;
  }
  if (slice <= 0) {
    return 0;
  }
  const int64_t block = std::max<int64_t>(1, block_rows);
  const int64_t per_slice = (rows / slices + block - 1) / block * block;
  return std::min(rows, slice * per_slice);
}

LinearOperands row_span(const LinearOperands& op, int64_t first, int64_t count) {
  LinearOperands span = op;
  span.rows = count;
  span.x = op.x + first * op.inner;
  span.x_bf16 = op.x_bf16 != nullptr ? op.x_bf16 + first * op.inner : nullptr;
  span.out = op.out + first * op.columns;
  return span;
}

LinearOperands column_span(const LinearOperands& op, int64_t first, int64_t count, float* out) {
  LinearOperands span = op;
  const size_t element_bytes = dtype_info(op.weight_dtype).block_bytes;
  const int64_t panel = first / kPanelColumns;
  span.weight = static_cast<const uint8_t*>(op.weight) + static_cast<size_t>(panel * op.panel_elements) * element_bytes;
  span.columns = count;
  span.out = out;
  return span;
}

Result<Part> make_part(const TensorSpec& x, const TensorSpec& weight, const TensorSpec* bias, const Attributes& attrs,
                       int64_t matrix, const LinearEntryPoints& entry_points) {
  if (x.dtype != DType::kF32 || x.shape.empty()) {
    return invalid_argument("linear: expected an f32 input [..., K], found ", dtype_name(x.dtype),
                            shape_string(x.shape));
  }
  if (bias != nullptr && !is_plain_float(bias->dtype)) {
    return unimplemented("linear: the cpu kernels take an f32, f16 or bf16 bias, found ", dtype_name(bias->dtype));
  }
  if (!is_plain_float(weight.dtype) && weight.dtype != DType::kU8) {
    return unimplemented("linear: the cpu kernels take f32, f16 or bf16 weights or int8 / int4 panels, found ",
                         dtype_name(weight.dtype));
  }
  STATICLM_ASSIGN_OR_RETURN(std::optional<PanelLayout> layout, matrix_layout(attrs, matrix, weight));
  if (!layout) {
    return unimplemented("linear: the cpu kernels read weights packed at export (", kWeightLayoutAttr, " ",
                         kPanel32Layout, ", the cpu backend's pack_weights pass), found ", kRowsLayout);
  }
  if (layout->cols != x.shape.back()) {
    return invalid_argument("linear: expected f32 input [..., K] and weight [N, K], found ", shape_string(x.shape),
                            " and [", layout->rows, ", ", layout->cols, "]");
  }
  if (layout->is_quantized() ? entry_points.quantized == nullptr : entry_points.gemv == nullptr) {
    return unimplemented("linear: this entry takes ", entry_points.gemv == nullptr ? "int8 / int4" : "float",
                         " weights, found ", layout->is_quantized() ? panel_layout_name(layout->codes) : "float ",
                         layout->is_quantized() ? "" : dtype_name(weight.dtype));
  }
  if (entry_points.bf16.round != nullptr && (weight.dtype != DType::kBF16 || layout->cols % 2 != 0)) {
    return unimplemented("linear: the bf16 GEMM takes bf16 weights with an even inner size, found ",
                         dtype_name(weight.dtype), " with ", layout->cols);
  }
  Part part;
  part.shape.rows = num_elements(std::span<const int64_t>(x.shape).first(x.shape.size() - 1));
  part.shape.inner = layout->cols;
  part.shape.columns = layout->rows;
  part.shape.panel_elements = layout->panel_elements();
  part.shape.weight_dtype = weight.dtype;
  part.shape.bias_dtype = bias != nullptr ? bias->dtype : DType::kF32;
  if (layout->is_quantized()) {
    part.shape.codes = layout->codes;
    part.shape.group = layout->group;
  }
  return part;
}

LinearColumnsFn columns_fn(const Part& part, const LinearEntryPoints& entry_points) {
  if (part.shape.codes != PanelCodes::kFloat) {
    return entry_points.quantized;
  }
  return part.shape.rows == 1 ? entry_points.gemv : entry_points.gemm;
}

Status check_same_format(const std::vector<Part>& parts, std::string_view op) {
  for (const Part& part : parts) {
    if (part.shape.codes != parts[0].shape.codes || part.shape.group != parts[0].shape.group) {
      return unimplemented(op, ": the cpu kernel takes parts of one weight format, found ",
                           panel_layout_name(parts[0].shape.codes), " and ", panel_layout_name(part.shape.codes));
    }
  }
  return ok_status();
}

}  // namespace staticlm::cpu
