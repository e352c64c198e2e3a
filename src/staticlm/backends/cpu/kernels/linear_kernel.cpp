// The Kernel around the per-ISA linear tiles: checks the signature, splits the output columns
// over the pool in whole tiles, and adds the bias to each range once its dot products are done.
#include <algorithm>
#include <vector>

#include "staticlm/backends/cpu/kernels/cpu_kernel_factories.h"
#include "staticlm/backends/cpu/kernels/linear_columns.h"
#include "staticlm/backends/portable/element_access.h"
#include "staticlm/backends/portable/kernel_factories.h"
#include "staticlm/core/float_convert.h"

namespace staticlm::cpu {
namespace {

// Roughly how many multiply-adds a range should hold before it is worth a thread.
constexpr int64_t kMinRangeWork = 1 << 15;

// The packed GEMM's panel: per thread, so concurrent sessions never share one; allocated once.
float* thread_scratch() {
  alignas(64) static thread_local float scratch[kLinearScratchFloats];
  return scratch;
}

class LinearKernel final : public Kernel {
 public:
  LinearKernel(LinearColumnsFn columns_fn, LinearOperands shape, void (*round_bf16)(const float*, int64_t, uint16_t*))
      : columns_fn_(columns_fn), shape_(shape), round_bf16_(round_bf16) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    LinearOperands op = shape_;
    op.x = inputs[0].data<float>();
    op.weight = inputs[1].raw();
    op.bias = inputs.size() > 2 ? inputs[2].raw() : nullptr;
    op.out = outputs[0].data<float>();
    if (op.rows == context.chunk_rows && context.padding_rows > 0) {
      // Only the chunk's real rows: a short prompt costs its own tokens, not the chunk's.
      op.x += context.padding_rows * op.inner;
      op.out += context.padding_rows * op.columns;
      op.rows -= context.padding_rows;
      if (op.rows <= 0) {
        return ok_status();
      }
    }
    if (round_bf16_ != nullptr && op.rows >= kPackedMinRows) {
      // x as bf16 for the bf16 GEMM, in the calling thread's buffer; the workers only read it.
      thread_local std::vector<uint16_t> x_bf16;
      x_bf16.resize(static_cast<size_t>(op.rows * op.inner));
      round_bf16_(op.x, op.rows * op.inner, x_bf16.data());
      op.x_bf16 = x_bf16.data();
    }
    const int64_t per_item = linear_columns_per_item(op.rows);
    const int64_t items = (op.columns + per_item - 1) / per_item;
    const int64_t item_work = std::max<int64_t>(1, op.rows * op.inner * per_item);
    context.thread_pool->parallel_for(items, std::max<int64_t>(1, kMinRangeWork / item_work),
                                      [&](int64_t begin, int64_t end) {
                                        const int64_t n_begin = begin * per_item;
                                        const int64_t n_end = std::min(end * per_item, op.columns);
                                        columns_fn_(op, n_begin, n_end, thread_scratch());
                                        if (op.bias != nullptr) {
                                          add_bias(op, n_begin, n_end);
                                        }
                                      });
    return ok_status();
  }

 private:
  static void add_bias(const LinearOperands& op, int64_t n_begin, int64_t n_end) {
    for (int64_t n = n_begin; n < n_end; ++n) {
      const float b = portable::load_float(op.bias, op.bias_dtype, n);
      for (int64_t m = 0; m < op.rows; ++m) {
        op.out[m * op.columns + n] += b;
      }
    }
  }

  LinearColumnsFn columns_fn_;
  LinearOperands shape_;  // sizes and dtypes; the pointers are bound per call
  void (*round_bf16_)(const float*, int64_t, uint16_t*);
};

}  // namespace

Result<std::unique_ptr<Kernel>> make_linear_kernel(const KernelSignature& signature, LinearEntryPoints entry_points) {
  STATICLM_RETURN_IF_ERROR(portable::check_signature(signature, 2, 3));
  const TensorSpec& x = *signature.inputs[0];
  const TensorSpec& weight = *signature.inputs[1];
  const TensorSpec* bias = signature.inputs.size() > 2 ? signature.inputs[2] : nullptr;
  if (x.dtype != DType::kF32 || x.shape.empty() || weight.shape.size() != 2 || weight.shape[1] != x.shape.back()) {
    return invalid_argument("linear: expected f32 input [..., K] and weight [N, K], found ", dtype_name(x.dtype),
                            shape_string(x.shape), " and ", shape_string(weight.shape));
  }
  if (!is_plain_float(weight.dtype) || (bias != nullptr && !is_plain_float(bias->dtype))) {
    return unimplemented("linear: the cpu kernels take f32, f16 or bf16 weights and bias, found ",
                         dtype_name(weight.dtype), bias != nullptr ? str_cat(" and ", dtype_name(bias->dtype)) : "");
  }
  if (entry_points.round_bf16 != nullptr && (weight.dtype != DType::kBF16 || x.shape.back() % 2 != 0)) {
    return unimplemented("linear: the bf16 GEMM takes bf16 weights with an even inner size, found ",
                         dtype_name(weight.dtype), " with ", x.shape.back());
  }
  LinearOperands shape;
  shape.rows = num_elements(std::span<const int64_t>(x.shape).first(x.shape.size() - 1));
  shape.inner = x.shape.back();
  shape.columns = weight.shape[0];
  shape.weight_dtype = weight.dtype;
  shape.bias_dtype = bias != nullptr ? bias->dtype : DType::kF32;
  return std::make_unique<LinearKernel>(shape.rows == 1 ? entry_points.gemv : entry_points.gemm, shape,
                                        entry_points.round_bf16);
}

}  // namespace staticlm::cpu
