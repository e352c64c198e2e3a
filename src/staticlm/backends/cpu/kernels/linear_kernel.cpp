// SPDX-License-Identifier: Apache-2.0
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
#include "staticlm/backends/cpu/kernels/linear_parts.h"
#include "staticlm/backends/portable/element_access.h"
#include "staticlm/backends/portable/kernel_factories.h"
#include "staticlm/backends/portable/multi_linear.h"
#include "staticlm/core/float_convert.h"
#include "staticlm/ops/weight_layout.h"

namespace staticlm::cpu {
namespace {

// The parts one kernel binds on the stack per call; a multi_linear with more runs on the
// portable kernel.
constexpr size_t kMaxParts = 8;

class LinearKernel final : public Kernel {
 public:
  LinearKernel(LinearColumnsFn columns_fn, int64_t item_columns, std::vector<Part> parts,
               const LinearEntryPoints& entry_points, PairwiseFn add)
      : columns_fn_(columns_fn),
        item_columns_(item_columns),
        parts_(std::move(parts)),
        entry_points_(entry_points),
        add_(add) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    const LinearOperands& shape = parts_[0].shape;
    const CallRows call = call_rows(inputs[0].data<float>(), shape, context, entry_points_);
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
    const int64_t column_items = first_item[parts_.size()];
    const int threads = context.thread_pool->num_threads();
    const int64_t slices = call.rows > 1 && call.x_quantized == nullptr
                               ? row_slices(column_items, call.rows, threads, entry_points_.float_block_rows)
                               : 1;
    if (slices > 1) {
      // Item i is slice i % slices of column item i / slices: a thread that claims both slices
      // of one item reads its weights once.
      context.thread_pool->parallel_for(column_items * slices, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const int64_t item = i / slices;
          const size_t p =
              static_cast<size_t>(std::upper_bound(first_item.begin() + 1,
                                                   first_item.begin() + static_cast<int64_t>(parts_.size()) + 1, item) -
                                  first_item.begin() - 1);
          const int64_t first = slice_start(call.rows, slices, i % slices, call.block_rows);
          const int64_t count = slice_start(call.rows, slices, i % slices + 1, call.block_rows) - first;
          const int64_t n_begin = (item - first_item[p]) * item_columns_;
          run_columns(row_span(ops[p], first, count),
                      residuals[p] != nullptr ? residuals[p] + first * ops[p].columns : nullptr, n_begin,
                      std::min(n_begin + item_columns_, ops[p].columns));
        }
      });
      return ok_status();
    }
    context.thread_pool->parallel_for(
        column_items, items_per_range(column_items, call.rows, call.rows * shape.inner * item_columns_, threads),
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
  LinearEntryPoints entry_points_;
  PairwiseFn add_;
};

// swiglu_linear: one range of items of the output's columns; per item (one or two panels), the
// gate's and the up's panels over every row into this thread's buffers (each a linear of the
// item's columns), then silu(gate) * up into the output. A one-row call (decode) takes its whole
// range as one item: the gate's and the up's columns each one long stream, as a linear's range
// is, where items of two panels restarted the streams every 73 KiB (SmolLM, bf16).
class SwigluLinearKernel final : public Kernel {
 public:
  SwigluLinearKernel(LinearColumnsFn columns_fn, int64_t item_columns, Part gate, Part up,
                     const LinearEntryPoints& entry_points, PairwiseFn swiglu)
      : columns_fn_(columns_fn),
        item_columns_(item_columns),
        gate_(gate),
        up_(up),
        entry_points_(entry_points),
        swiglu_(swiglu) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    const LinearOperands& shape = gate_.shape;
    const CallRows call = call_rows(inputs[0].data<float>(), shape, context, entry_points_);
    if (call.rows <= 0) {
      return ok_status();
    }
    const LinearOperands gate = bind_part(gate_, call, inputs, outputs[0]);
    const LinearOperands up = bind_part(up_, call, inputs, outputs[0]);
    const int64_t items = items_of(shape.columns, item_columns_);
    context.thread_pool->parallel_for(
        items,
        items_per_range(items, call.rows, 2 * call.rows * shape.inner * item_columns_,
                        context.thread_pool->num_threads()),
        [&](int64_t begin, int64_t end) {
          const int64_t per_step = call.rows == 1 ? end - begin : 1;
          // Line-aligned: the micro-kernels store whole 64-byte rows of 16 floats, and a store
          // split across two lines touches both (swiglu_linear in `staticlm bench --ops`, bf16).
          thread_local std::vector<float> storage;
          storage.resize(static_cast<size_t>(2 * call.rows * per_step * item_columns_ + kLineFloats));
          const auto address = reinterpret_cast<uintptr_t>(storage.data());
          float* buffers = storage.data() + ((kLineBytes - address % kLineBytes) % kLineBytes) / sizeof(float);
          for (int64_t item = begin; item < end; item += per_step) {
            run_items(gate, up, item, std::min(end, item + per_step), buffers);
          }
        });
    return ok_status();
  }

 private:
  // Items [first, last) of gate and up into `buffers` ([rows, columns] each), then combined into
  // the output.
  void run_items(const LinearOperands& gate, const LinearOperands& up, int64_t first, int64_t last,
                 float* buffers) const {
    const int64_t n0 = first * item_columns_;
    const int64_t columns = std::min(last * item_columns_, gate.columns) - n0;
    const LinearOperands gate_span = column_span(gate, n0, columns, buffers);
    const LinearOperands up_span = column_span(up, n0, columns, buffers + gate.rows * columns);
    columns_fn_(gate_span, 0, columns, thread_scratch());
    columns_fn_(up_span, 0, columns, thread_scratch());
    for (int64_t m = 0; m < gate.rows; ++m) {
      swiglu_(gate_span.out + m * columns, up_span.out + m * columns, gate.out + m * gate.columns + n0, columns);
    }
  }

  LinearColumnsFn columns_fn_;
  int64_t item_columns_;
  Part gate_;
  Part up_;
  LinearEntryPoints entry_points_;
  PairwiseFn swiglu_;
};

Result<std::unique_ptr<Kernel>> make_kernel(std::vector<Part> parts, const LinearEntryPoints& entry_points) {
  STATICLM_RETURN_IF_ERROR(check_same_format(parts, "multi_linear"));
  const LinearColumnsFn columns = columns_fn(parts[0], entry_points);
  const int64_t item = item_columns(parts[0].shape, entry_points);
  return std::unique_ptr<Kernel>(
      std::make_unique<LinearKernel>(columns, item, std::move(parts), entry_points, entry_points.add));
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
  const PairwiseFn gate_fn = portable::gate_activation(signature.op) == portable::GateActivation::kSilu
                                 ? entry_points.swiglu
                                 : entry_points.geglu;
  if (gate_fn == nullptr) {
    return unimplemented(op_name(signature.op), ": this entry has no loop for its activation");
  }
  const TensorSpec& x = *signature.inputs[0];
  auto gate = make_part(x, *signature.inputs[1], nullptr, signature.attributes, 0, entry_points);
  if (!gate.ok()) {
    return gate.status().with_context(str_cat(op_name(signature.op), " gate"));
  }
  auto up = make_part(x, *signature.inputs[2], nullptr, signature.attributes, 1, entry_points);
  if (!up.ok()) {
    return up.status().with_context(str_cat(op_name(signature.op), " up"));
  }
  STATICLM_RETURN_IF_ERROR(check_same_format({*gate, *up}, op_name(signature.op)));
  if (gate->shape.columns != up->shape.columns) {
    return invalid_argument(op_name(signature.op), ": gate and up have ", gate->shape.columns, " and ",
                            up->shape.columns, " outputs");
  }
  gate->weight_input = 1;
  up->weight_input = 2;
  return std::unique_ptr<Kernel>(std::make_unique<SwigluLinearKernel>(
      columns_fn(*gate, entry_points), item_columns(gate->shape, entry_points), *gate, *up, entry_points, gate_fn));
}

}  // namespace staticlm::cpu
