// The Kernels around the per-ISA linear tiles, for linear, multi_linear (several weights over
// one x), linear_add (a linear and its residual connection) and swiglu_linear (the gated MLP's
// gate and up with silu(gate) * up): each checks the signature and splits the output columns
// over the pool in whole panels as one range, so q / k / v or gate / up cost one barrier; each
// range adds its bias and residual, or combines its gate and up panels, while they are in cache,
// so the fused ops cost no pass of their own. It takes weights packed at export (panel32); a
// weight in rows is declined, and runs on the portable kernel.
#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include "staticlm/backends/cpu/kernels/cpu_kernel_factories.h"
#include "staticlm/backends/cpu/kernels/linear_columns.h"
#include "staticlm/backends/cpu/kernels/quantized_rows.h"
#include "staticlm/backends/portable/element_access.h"
#include "staticlm/backends/portable/kernel_factories.h"
#include "staticlm/backends/portable/multi_linear.h"
#include "staticlm/core/float_convert.h"
#include "staticlm/ops/weight_layout.h"

namespace staticlm::cpu {
namespace {

// Roughly how many multiply-adds a range should hold before it is worth a thread.
constexpr int64_t kMinRangeWork = 1 << 15;
constexpr uintptr_t kLineBytes = 64;
constexpr int64_t kLineFloats = kLineBytes / sizeof(float);
// The parts one kernel binds on the stack per call; a multi_linear with more runs on the
// portable kernel.
constexpr size_t kMaxParts = 8;

// The GEMM's widened K block: per thread, so concurrent sessions never share one; allocated once.
float* thread_scratch() {
  alignas(64) static thread_local float scratch[kLinearScratchFloats];
  return scratch;
}

using RoundBf16Fn = void (*)(const float*, int64_t, uint16_t*);

// One weight of the kernel: its sizes and dtypes, and where its operands are in the call.
struct Part {
  LinearOperands shape;  // the pointers are bound per call
  size_t weight_input = 0;
  int bias_input = -1;
  int residual_input = -1;  // linear_add: the residual added to the output
};

// The rows a call computes: a chunk's real rows (a short prompt costs its own tokens, not the
// chunk's), x from the first of them, and x rounded to bf16 for an entry whose GEMM multiplies
// bf16 pairs, or quantized per group for int8 / int4 weights (in the calling thread's buffers,
// once for every part; the workers only read them).
struct CallRows {
  int64_t rows = 0;
  int64_t padding = 0;
  const float* x = nullptr;
  const uint16_t* x_bf16 = nullptr;
  const QuantizedRows* x_quantized = nullptr;
};

// `shape` is the first part's: its weights say whether x is rounded or quantized.
CallRows call_rows(const float* x, const LinearOperands& shape, const KernelContext& context, RoundBf16Fn round_bf16) {
  const int64_t rows = shape.rows;
  const int64_t inner = shape.inner;
  CallRows call{rows, 0, x, nullptr};
  if (rows == context.chunk_rows && context.padding_rows > 0) {
    call.padding = std::min(context.padding_rows, rows);
    call.rows = rows - call.padding;
    call.x = x + call.padding * inner;
  }
  if (round_bf16 != nullptr && call.rows >= kPackedMinRows) {
    thread_local std::vector<uint16_t> rounded;
    rounded.resize(static_cast<size_t>(call.rows * inner));
    round_bf16(call.x, call.rows * inner, rounded.data());
    call.x_bf16 = rounded.data();
  }
  if (shape.codes != PanelCodes::kFloat && call.rows > 0) {
    thread_local QuantizedRows quantized;
    quantize_rows(call.x, call.rows, inner, shape.group, quantized);
    call.x_quantized = &quantized;
  }
  return call;
}

// Part `part` bound to the call's rows and tensors.
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

// Output columns per item of work: LinearEntryPoints::gemm_panels panels for the float GEMM (a
// range that split a pair would leave both halves to the one-panel kernel), one otherwise.
int64_t item_columns(const LinearOperands& shape, const LinearEntryPoints& entry_points) {
  const bool float_gemm = shape.codes == PanelCodes::kFloat && shape.rows > 1;
  return (float_gemm ? entry_points.gemm_panels : 1) * kPanelColumns;
}

int64_t items_of(int64_t columns, int64_t item_columns) {
  return (columns + item_columns - 1) / item_columns;
}

// How many items of a range are worth a thread, given the multiply-adds of one.
int64_t items_per_range(int64_t item_work) {
  return std::max<int64_t>(1, kMinRangeWork / std::max<int64_t>(1, item_work));
}

class LinearKernel final : public Kernel {
 public:
  LinearKernel(LinearColumnsFn columns_fn, int64_t item_columns, std::vector<Part> parts, RoundBf16Fn round_bf16,
               PairwiseFn add)
      : columns_fn_(columns_fn),
        item_columns_(item_columns),
        parts_(std::move(parts)),
        round_bf16_(round_bf16),
        add_(add) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    const LinearOperands& shape = parts_[0].shape;
    const CallRows call = call_rows(inputs[0].data<float>(), shape, context, round_bf16_);
    if (call.rows <= 0) {
      return ok_status();
    }
    std::array<LinearOperands, kMaxParts> ops;
    std::array<const float*, kMaxParts> residuals{};
    std::array<int64_t, kMaxParts + 1> first_item{};
    for (size_t p = 0; p < parts_.size(); ++p) {
      ops[p] = bind_part(parts_[p], call, inputs, outputs[p]);
      if (parts_[p].residual_input >= 0) {
        residuals[p] =
            inputs[static_cast<size_t>(parts_[p].residual_input)].data<float>() + call.padding * ops[p].columns;
      }
      first_item[p + 1] = first_item[p] + items_of(ops[p].columns, item_columns_);
    }
    const int64_t items = first_item[parts_.size()];
    context.thread_pool->parallel_for(items, items_per_range(call.rows * shape.inner * item_columns_),
                                      [&](int64_t begin, int64_t end) {
                                        for (size_t p = 0; p < parts_.size(); ++p) {
                                          const int64_t from = std::max(begin, first_item[p]);
                                          const int64_t to = std::min(end, first_item[p + 1]);
                                          if (from < to) {
                                            run_columns(ops[p], residuals[p], (from - first_item[p]) * item_columns_,
                                                        std::min((to - first_item[p]) * item_columns_, ops[p].columns));
                                          }
                                        }
                                      });
    return ok_status();
  }

 private:
  void run_columns(const LinearOperands& op, const float* residual, int64_t n_begin, int64_t n_end) const {
    columns_fn_(op, n_begin, n_end, thread_scratch());
    if (op.bias == nullptr && residual == nullptr) {
      return;
    }
    for (int64_t m = 0; m < op.rows; ++m) {
      float* out = op.out + m * op.columns;
      if (op.bias != nullptr) {
        for (int64_t n = n_begin; n < n_end; ++n) {
          out[n] += portable::load_float(op.bias, op.bias_dtype, n);
        }
      }
      if (residual != nullptr) {
        // The residual on the left, as the add the op replaces computed it.
        add_(residual + m * op.columns + n_begin, out + n_begin, out + n_begin, n_end - n_begin);
      }
    }
  }

  LinearColumnsFn columns_fn_;
  int64_t item_columns_;
  std::vector<Part> parts_;
  RoundBf16Fn round_bf16_;
  PairwiseFn add_;
};

// swiglu_linear: one range of items of the output's columns; per item (one or two panels), the
// gate's and the up's panels over every row into this thread's buffers (each a linear of the
// item's columns), then silu(gate) * up into the output.
class SwigluLinearKernel final : public Kernel {
 public:
  SwigluLinearKernel(LinearColumnsFn columns_fn, int64_t item_columns, Part gate, Part up, RoundBf16Fn round_bf16,
                     PairwiseFn swiglu)
      : columns_fn_(columns_fn),
        item_columns_(item_columns),
        gate_(gate),
        up_(up),
        round_bf16_(round_bf16),
        swiglu_(swiglu) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    const LinearOperands& shape = gate_.shape;
    const CallRows call = call_rows(inputs[0].data<float>(), shape, context, round_bf16_);
    if (call.rows <= 0) {
      return ok_status();
    }
    const LinearOperands gate = bind_part(gate_, call, inputs, outputs[0]);
    const LinearOperands up = bind_part(up_, call, inputs, outputs[0]);
    context.thread_pool->parallel_for(
        items_of(shape.columns, item_columns_), items_per_range(2 * call.rows * shape.inner * item_columns_),
        [&](int64_t begin, int64_t end) {
          // Line-aligned: the micro-kernels store whole 64-byte rows of 16 floats, and a store
          // split across two lines cost the bf16 GEMM 4%.
          thread_local std::vector<float> storage;
          storage.resize(static_cast<size_t>(2 * call.rows * item_columns_ + kLineFloats));
          const auto address = reinterpret_cast<uintptr_t>(storage.data());
          float* buffers = storage.data() + ((kLineBytes - address % kLineBytes) % kLineBytes) / sizeof(float);
          for (int64_t item = begin; item < end; ++item) {
            run_item(gate, up, item, buffers);
          }
        });
    return ok_status();
  }

 private:
  // `op`'s panels of item `item` alone, as a linear of their columns writing [rows, columns] to
  // `out`.
  LinearOperands item_of(const LinearOperands& op, int64_t item, float* out) const {
    LinearOperands span = op;
    const size_t element_bytes = dtype_info(op.weight_dtype).block_bytes;
    const int64_t panel = item * item_columns_ / kPanelColumns;
    span.weight =
        static_cast<const uint8_t*>(op.weight) + static_cast<size_t>(panel * op.panel_elements) * element_bytes;
    span.columns = std::min(item_columns_, op.columns - item * item_columns_);
    span.out = out;
    return span;
  }

  void run_item(const LinearOperands& gate, const LinearOperands& up, int64_t item, float* buffers) const {
    const LinearOperands gate_span = item_of(gate, item, buffers);
    const LinearOperands up_span = item_of(up, item, buffers + gate.rows * item_columns_);
    columns_fn_(gate_span, 0, gate_span.columns, thread_scratch());
    columns_fn_(up_span, 0, up_span.columns, thread_scratch());
    const int64_t columns = gate_span.columns;
    for (int64_t m = 0; m < gate.rows; ++m) {
      swiglu_(gate_span.out + m * columns, up_span.out + m * columns,
              gate.out + m * gate.columns + item * item_columns_, columns);
    }
  }

  LinearColumnsFn columns_fn_;
  int64_t item_columns_;
  Part gate_;
  Part up_;
  RoundBf16Fn round_bf16_;
  PairwiseFn swiglu_;
};

// Part of a kernel over x: weight (matrix input `matrix` of the node) and bias as the panels take
// them, or Unimplemented.
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
  if (entry_points.round_bf16 != nullptr && (weight.dtype != DType::kBF16 || layout->cols % 2 != 0)) {
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

// The parts of one kernel share x, so they share its quantization: one format and group, or
// all float.
Status check_same_format(const std::vector<Part>& parts, std::string_view op) {
  for (const Part& part : parts) {
    if (part.shape.codes != parts[0].shape.codes || part.shape.group != parts[0].shape.group) {
      return unimplemented(op, ": the cpu kernel takes parts of one weight format, found ",
                           panel_layout_name(parts[0].shape.codes), " and ", panel_layout_name(part.shape.codes));
    }
  }
  return ok_status();
}

Result<std::unique_ptr<Kernel>> make_kernel(std::vector<Part> parts, const LinearEntryPoints& entry_points) {
  STATICLM_RETURN_IF_ERROR(check_same_format(parts, "multi_linear"));
  const LinearColumnsFn columns = columns_fn(parts[0], entry_points);
  const int64_t item = item_columns(parts[0].shape, entry_points);
  return std::unique_ptr<Kernel>(
      std::make_unique<LinearKernel>(columns, item, std::move(parts), entry_points.round_bf16, entry_points.add));
}

// A linear of x (input 0) and weight (input 1), with the bias at `bias_input` where the call has
// one and the residual at `residual_input` (-1: none).
Result<std::unique_ptr<Kernel>> single_weight_kernel(const KernelSignature& signature,
                                                     const LinearEntryPoints& entry_points, size_t bias_input,
                                                     int residual_input) {
  const TensorSpec* bias = signature.inputs.size() > bias_input ? signature.inputs[bias_input] : nullptr;
  STATICLM_ASSIGN_OR_RETURN(
      Part part, make_part(*signature.inputs[0], *signature.inputs[1], bias, signature.attributes, 0, entry_points));
  part.weight_input = 1;
  part.bias_input = bias != nullptr ? static_cast<int>(bias_input) : -1;
  part.residual_input = residual_input;
  std::vector<Part> parts{part};
  return make_kernel(std::move(parts), entry_points);
}

}  // namespace

Result<std::unique_ptr<Kernel>> make_linear_kernel(const KernelSignature& signature, LinearEntryPoints entry_points) {
  STATICLM_RETURN_IF_ERROR(portable::check_signature(signature, 2, 3));
  return single_weight_kernel(signature, entry_points, 2, -1);
}

Result<std::unique_ptr<Kernel>> make_multi_linear_kernel(const KernelSignature& signature,
                                                         LinearEntryPoints entry_points) {
  STATICLM_ASSIGN_OR_RETURN(portable::MultiLinearLayout layout, portable::MultiLinearLayout::of(signature));
  if (static_cast<size_t>(layout.parts()) > kMaxParts) {
    return unimplemented("multi_linear: the cpu kernel takes at most ", kMaxParts, " parts, found ", layout.parts());
  }
  std::vector<Part> parts;
  for (int64_t p = 0; p < layout.parts(); ++p) {
    const TensorSpec* specs[3];
    layout.linear_inputs(signature.inputs, p, specs);
    const TensorSpec* bias = layout.biased() ? specs[2] : nullptr;
    auto part = make_part(*specs[0], *specs[1], bias, signature.attributes, p, entry_points);
    if (!part.ok()) {
      return part.status().with_context(str_cat("multi_linear part ", p));
    }
    part->weight_input = static_cast<size_t>(1 + p);
    part->bias_input = layout.biased() ? static_cast<int>(1 + layout.parts() + p) : -1;
    parts.push_back(*part);
  }
  return make_kernel(std::move(parts), entry_points);
}

Result<std::unique_ptr<Kernel>> make_linear_add_kernel(const KernelSignature& signature,
                                                       LinearEntryPoints entry_points) {
  STATICLM_RETURN_IF_ERROR(portable::check_signature(signature, 3, 4));
  if (entry_points.add == nullptr) {
    return unimplemented("linear_add: this entry has no add loop");
  }
  const TensorSpec& residual = *signature.inputs[2];
  if (residual != signature.outputs[0]) {
    return invalid_argument("linear_add: expected a residual of the output's spec ",
                            shape_string(signature.outputs[0].shape), ", found ", dtype_name(residual.dtype),
                            shape_string(residual.shape));
  }
  return single_weight_kernel(signature, entry_points, 3, 2);
}

Result<std::unique_ptr<Kernel>> make_swiglu_linear_kernel(const KernelSignature& signature,
                                                          LinearEntryPoints entry_points) {
  STATICLM_RETURN_IF_ERROR(portable::check_signature(signature, 3, 3));
  if (entry_points.swiglu == nullptr) {
    return unimplemented("swiglu_linear: this entry has no swiglu loop");
  }
  const TensorSpec& x = *signature.inputs[0];
  auto gate = make_part(x, *signature.inputs[1], nullptr, signature.attributes, 0, entry_points);
  if (!gate.ok()) {
    return gate.status().with_context("swiglu_linear gate");
  }
  auto up = make_part(x, *signature.inputs[2], nullptr, signature.attributes, 1, entry_points);
  if (!up.ok()) {
    return up.status().with_context("swiglu_linear up");
  }
  STATICLM_RETURN_IF_ERROR(check_same_format({*gate, *up}, "swiglu_linear"));
  if (gate->shape.columns != up->shape.columns) {
    return invalid_argument("swiglu_linear: gate and up have ", gate->shape.columns, " and ", up->shape.columns,
                            " outputs");
  }
  gate->weight_input = 1;
  up->weight_input = 2;
  return std::unique_ptr<Kernel>(
      std::make_unique<SwigluLinearKernel>(columns_fn(*gate, entry_points), item_columns(gate->shape, entry_points),
                                           *gate, *up, entry_points.round_bf16, entry_points.swiglu));
}

}  // namespace staticlm::cpu
