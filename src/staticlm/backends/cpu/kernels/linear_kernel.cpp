// The Kernel around the per-ISA linear tiles, for linear and for multi_linear (several weights
// over one x): checks the signature, splits the output columns of every part over the pool in
// whole panels as one range, so q / k / v or gate / up cost one barrier, and adds the bias to each
// range once its dot products are done. It takes weights packed at export (panel32); a weight in
// rows is declined, and runs on the portable kernel.
#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include "staticlm/backends/cpu/kernels/cpu_kernel_factories.h"
#include "staticlm/backends/cpu/kernels/linear_columns.h"
#include "staticlm/backends/portable/element_access.h"
#include "staticlm/backends/portable/kernel_factories.h"
#include "staticlm/backends/portable/multi_linear.h"
#include "staticlm/core/float_convert.h"
#include "staticlm/ops/weight_layout.h"

namespace staticlm::cpu {
namespace {

// Roughly how many multiply-adds a range should hold before it is worth a thread.
constexpr int64_t kMinRangeWork = 1 << 15;
// The parts one kernel binds on the stack per call; a multi_linear with more runs on the
// portable kernel.
constexpr size_t kMaxParts = 8;

// The GEMM's widened K block: per thread, so concurrent sessions never share one; allocated once.
float* thread_scratch() {
  alignas(64) static thread_local float scratch[kLinearScratchFloats];
  return scratch;
}

// One weight of the kernel: its sizes and dtypes, and where its operands are in the call.
struct Part {
  LinearOperands shape;  // the pointers are bound per call
  size_t weight_input = 0;
  int bias_input = -1;
};

class LinearKernel final : public Kernel {
 public:
  LinearKernel(LinearColumnsFn columns_fn, std::vector<Part> parts,
               void (*round_bf16)(const float*, int64_t, uint16_t*))
      : columns_fn_(columns_fn), parts_(std::move(parts)), round_bf16_(round_bf16) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    std::array<LinearOperands, kMaxParts> ops;
    const float* x = inputs[0].data<float>();
    int64_t rows = parts_[0].shape.rows;
    int64_t padding = 0;
    if (rows == context.chunk_rows && context.padding_rows > 0) {
      // Only the chunk's real rows: a short prompt costs its own tokens, not the chunk's.
      padding = context.padding_rows;
      rows -= padding;
      if (rows <= 0) {
        return ok_status();
      }
    }
    const int64_t inner = parts_[0].shape.inner;
    const uint16_t* x_bf16 = nullptr;
    if (round_bf16_ != nullptr && rows >= kPackedMinRows) {
      // x as bf16 for the bf16 GEMM, once for every part, in the calling thread's buffer; the
      // workers only read it.
      thread_local std::vector<uint16_t> rounded;
      rounded.resize(static_cast<size_t>(rows * inner));
      round_bf16_(x + padding * inner, rows * inner, rounded.data());
      x_bf16 = rounded.data();
    }
    constexpr int64_t per_item = kPanelColumns;
    std::array<int64_t, kMaxParts + 1> first_item{};
    for (size_t p = 0; p < parts_.size(); ++p) {
      LinearOperands& op = ops[p];
      op = parts_[p].shape;
      op.rows = rows;
      op.x = x + padding * inner;
      op.x_bf16 = x_bf16;
      op.weight = inputs[parts_[p].weight_input].raw();
      op.bias = parts_[p].bias_input >= 0 ? inputs[static_cast<size_t>(parts_[p].bias_input)].raw() : nullptr;
      op.out = outputs[p].data<float>() + padding * op.columns;
      first_item[p + 1] = first_item[p] + (op.columns + per_item - 1) / per_item;
    }
    const int64_t items = first_item[parts_.size()];
    const int64_t item_work = std::max<int64_t>(1, rows * inner * per_item);
    context.thread_pool->parallel_for(items, std::max<int64_t>(1, kMinRangeWork / item_work),
                                      [&](int64_t begin, int64_t end) {
                                        for (size_t p = 0; p < parts_.size(); ++p) {
                                          const int64_t from = std::max(begin, first_item[p]);
                                          const int64_t to = std::min(end, first_item[p + 1]);
                                          if (from < to) {
                                            run_columns(ops[p], (from - first_item[p]) * per_item,
                                                        std::min((to - first_item[p]) * per_item, ops[p].columns));
                                          }
                                        }
                                      });
    return ok_status();
  }

 private:
  void run_columns(const LinearOperands& op, int64_t n_begin, int64_t n_end) const {
    columns_fn_(op, n_begin, n_end, thread_scratch());
    if (op.bias != nullptr) {
      for (int64_t n = n_begin; n < n_end; ++n) {
        const float b = portable::load_float(op.bias, op.bias_dtype, n);
        for (int64_t m = 0; m < op.rows; ++m) {
          op.out[m * op.columns + n] += b;
        }
      }
    }
  }

  LinearColumnsFn columns_fn_;
  std::vector<Part> parts_;
  void (*round_bf16_)(const float*, int64_t, uint16_t*);
};

// Part of a kernel over x: weight (matrix input `matrix` of the node) and bias as the panels take
// them, or Unimplemented.
Result<Part> make_part(const TensorSpec& x, const TensorSpec& weight, const TensorSpec* bias, const Attributes& attrs,
                       int64_t matrix, const LinearEntryPoints& entry_points) {
  if (x.dtype != DType::kF32 || x.shape.empty()) {
    return invalid_argument("linear: expected an f32 input [..., K], found ", dtype_name(x.dtype),
                            shape_string(x.shape));
  }
  if (!is_plain_float(weight.dtype) || (bias != nullptr && !is_plain_float(bias->dtype))) {
    return unimplemented("linear: the cpu kernels take f32, f16 or bf16 weights and bias, found ",
                         dtype_name(weight.dtype), bias != nullptr ? str_cat(" and ", dtype_name(bias->dtype)) : "");
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
  return part;
}

std::unique_ptr<Kernel> make_kernel(std::vector<Part> parts, const LinearEntryPoints& entry_points) {
  const LinearColumnsFn columns = parts[0].shape.rows == 1 ? entry_points.gemv : entry_points.gemm;
  return std::make_unique<LinearKernel>(columns, std::move(parts), entry_points.round_bf16);
}

}  // namespace

Result<std::unique_ptr<Kernel>> make_linear_kernel(const KernelSignature& signature, LinearEntryPoints entry_points) {
  STATICLM_RETURN_IF_ERROR(portable::check_signature(signature, 2, 3));
  const TensorSpec* bias = signature.inputs.size() > 2 ? signature.inputs[2] : nullptr;
  STATICLM_ASSIGN_OR_RETURN(
      Part part, make_part(*signature.inputs[0], *signature.inputs[1], bias, signature.attributes, 0, entry_points));
  part.weight_input = 1;
  part.bias_input = bias != nullptr ? 2 : -1;
  std::vector<Part> parts{part};
  return make_kernel(std::move(parts), entry_points);
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

}  // namespace staticlm::cpu
