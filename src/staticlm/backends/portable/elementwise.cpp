// SPDX-License-Identifier: Apache-2.0
// Elementwise f32 ops: add and mul with NumPy broadcasting, silu, gelu (exact erf form or the
// tanh approximation), softcap (cap * tanh(x / cap)) and the fused swiglu. Broadcast strides are
// computed once at creation.
#include <cmath>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "staticlm/backends/portable/kernel_factories.h"

namespace staticlm::portable {
namespace {

enum class BinaryOp { kAdd, kMul };

// Walks the output in row-major order; an input's stride is 0 along the axes it broadcasts.
class BinaryKernel final : public Kernel {
 public:
  BinaryKernel(BinaryOp op, Shape out_shape, std::vector<int64_t> lhs_strides, std::vector<int64_t> rhs_strides)
      : op_(op),
        out_shape_(std::move(out_shape)),
        lhs_strides_(std::move(lhs_strides)),
        rhs_strides_(std::move(rhs_strides)) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext&) const override {
    const float* lhs = inputs[0].data<float>();
    const float* rhs = inputs[1].data<float>();
    float* out = outputs[0].data<float>();
    if (op_ == BinaryOp::kAdd) {
      apply(lhs, rhs, out, [](float a, float b) { return a + b; });
    } else {
      apply(lhs, rhs, out, [](float a, float b) { return a * b; });
    }
    return ok_status();
  }

 private:
  template <typename Fn>
  void apply(const float* lhs, const float* rhs, float* out, Fn fn) const {
    const int64_t total = num_elements(out_shape_);
    if (total == 0) {
      return;
    }
    const size_t last = out_shape_.size() - 1;
    const int64_t inner = out_shape_[last];
    const int64_t lhs_step = lhs_strides_[last];
    const int64_t rhs_step = rhs_strides_[last];
    std::vector<int64_t> index(out_shape_.size(), 0);  // the current output index, last axis excluded
    for (int64_t base = 0; base < total; base += inner) {
      int64_t lhs_offset = 0;
      int64_t rhs_offset = 0;
      for (size_t axis = 0; axis < last; ++axis) {
        lhs_offset += index[axis] * lhs_strides_[axis];
        rhs_offset += index[axis] * rhs_strides_[axis];
      }
      for (int64_t i = 0; i < inner; ++i) {
        out[base + i] = fn(lhs[lhs_offset + i * lhs_step], rhs[rhs_offset + i * rhs_step]);
      }
      for (size_t axis = last; axis-- > 0;) {
        if (++index[axis] < out_shape_[axis]) {
          break;
        }
        index[axis] = 0;
      }
    }
  }

  BinaryOp op_;
  Shape out_shape_;  // at least rank 1
  std::vector<int64_t> lhs_strides_;
  std::vector<int64_t> rhs_strides_;
};

// Row-major strides of `shape` aligned to the right of a rank-`rank` output, 0 where the
// input has extent 1 (or lacks the axis) so that the same element is reused.
std::vector<int64_t> broadcast_strides(const Shape& shape, size_t rank) {
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    const size_t axis = shape.size() - 1 - i;
    const size_t out_axis = rank - 1 - i;
    strides[out_axis] = shape[axis] == 1 ? 0 : stride;
    stride *= shape[axis];
  }
  return strides;
}

KernelResult make_binary_kernel(const KernelSignature& signature, BinaryOp op) {
  STATICLM_RETURN_IF_ERROR(check_signature(signature, 2, 2));
  const TensorSpec& lhs = *signature.inputs[0];
  const TensorSpec& rhs = *signature.inputs[1];
  const TensorSpec& out = signature.outputs[0];
  bool valid = lhs.dtype == DType::kF32 && rhs.dtype == DType::kF32 && out.dtype == DType::kF32 &&
               lhs.shape.size() <= out.shape.size() && rhs.shape.size() <= out.shape.size();
  for (size_t i = 0; valid && i < out.shape.size(); ++i) {
    for (const Shape* in : {&lhs.shape, &rhs.shape}) {
      if (i < in->size()) {
        const int64_t dim = (*in)[in->size() - 1 - i];
        valid = valid && (dim == 1 || dim == out.shape[out.shape.size() - 1 - i]);
      }
    }
  }
  if (!valid) {
    return invalid_argument(op_name(signature.op), ": inputs ", dtype_name(lhs.dtype), shape_string(lhs.shape), " and ",
                            dtype_name(rhs.dtype), shape_string(rhs.shape), " do not broadcast to ",
                            dtype_name(out.dtype), shape_string(out.shape));
  }
  Shape out_shape = out.shape.empty() ? Shape{1} : out.shape;
  auto lhs_strides = broadcast_strides(lhs.shape, out_shape.size());
  auto rhs_strides = broadcast_strides(rhs.shape, out_shape.size());
  return std::make_unique<BinaryKernel>(op, std::move(out_shape), std::move(lhs_strides), std::move(rhs_strides));
}

enum class UnaryOp { kSilu, kGeluErf, kGeluTanh };

float silu(float x) {
  return x / (1.0f + std::exp(-x));
}

float gelu_erf(float x) {
  return 0.5f * x * (1.0f + std::erf(x * static_cast<float>(std::numbers::sqrt2 / 2.0)));
}

float gelu_tanh(float x) {
  constexpr auto kSqrt2OverPi = static_cast<float>(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
}

template <float (*Fn)(float)>
void map_all(const float* x, float* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    out[i] = Fn(x[i]);
  }
}

class UnaryKernel final : public Kernel {
 public:
  UnaryKernel(UnaryOp op, int64_t count) : op_(op), count_(count) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext&) const override {
    const float* x = inputs[0].data<float>();
    float* out = outputs[0].data<float>();
    switch (op_) {
      case UnaryOp::kSilu: map_all<silu>(x, out, count_); break;
      case UnaryOp::kGeluErf: map_all<gelu_erf>(x, out, count_); break;
      case UnaryOp::kGeluTanh: map_all<gelu_tanh>(x, out, count_); break;
    }
    return ok_status();
  }

 private:
  UnaryOp op_;
  int64_t count_;
};

KernelResult make_unary_kernel(const KernelSignature& signature, UnaryOp op) {
  STATICLM_RETURN_IF_ERROR(check_signature(signature, 1, 1));
  const TensorSpec& x = *signature.inputs[0];
  if (x.dtype != DType::kF32 || signature.outputs[0] != x) {
    return invalid_argument(op_name(signature.op), ": expected an f32 input and an output of the same spec, found ",
                            dtype_name(x.dtype), shape_string(x.shape));
  }
  return std::make_unique<UnaryKernel>(op, num_elements(x.shape));
}

class SoftcapKernel final : public Kernel {
 public:
  SoftcapKernel(float cap, int64_t count) : cap_(cap), count_(count) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext&) const override {
    const float* x = inputs[0].data<float>();
    float* out = outputs[0].data<float>();
    for (int64_t i = 0; i < count_; ++i) {
      out[i] = cap_ * std::tanh(x[i] / cap_);
    }
    return ok_status();
  }

 private:
  float cap_;
  int64_t count_;
};

// swiglu: out = silu(gate) * up (geglu: gelu_tanh(gate) * up), elementwise, exactly as the silu
// (gelu) and mul kernels compute it.
class SwigluKernel final : public Kernel {
 public:
  SwigluKernel(int64_t count, GateActivation activation) : count_(count), activation_(activation) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext&) const override {
    const float* gate = inputs[0].data<float>();
    const float* up = inputs[1].data<float>();
    float* out = outputs[0].data<float>();
    for (int64_t i = 0; i < count_; ++i) {
      out[i] = (activation_ == GateActivation::kSilu ? silu(gate[i]) : gelu_tanh(gate[i])) * up[i];
    }
    return ok_status();
  }

 private:
  int64_t count_;
  GateActivation activation_;
};

}  // namespace

KernelResult make_swiglu_kernel(const KernelSignature& signature) {
  STATICLM_RETURN_IF_ERROR(check_signature(signature, 2, 2));
  const GateActivation activation = gate_activation(signature.op);
  const TensorSpec& gate = *signature.inputs[0];
  const TensorSpec& up = *signature.inputs[1];
  if (gate.dtype != DType::kF32 || up != gate || signature.outputs[0] != gate) {
    return invalid_argument(op_name(signature.op), ": expected f32 gate and up of one shape, found ",
                            dtype_name(gate.dtype), shape_string(gate.shape), " and ", dtype_name(up.dtype),
                            shape_string(up.shape));
  }
  return std::make_unique<SwigluKernel>(num_elements(gate.shape), activation);
}

KernelResult make_add_kernel(const KernelSignature& signature) {
  return make_binary_kernel(signature, BinaryOp::kAdd);
}
KernelResult make_mul_kernel(const KernelSignature& signature) {
  return make_binary_kernel(signature, BinaryOp::kMul);
}
KernelResult make_silu_kernel(const KernelSignature& signature) {
  return make_unary_kernel(signature, UnaryOp::kSilu);
}

KernelResult make_softcap_kernel(const KernelSignature& signature) {
  auto cap = signature.attributes.get_float("cap");
  if (!cap.ok()) {
    return cap.status().with_context("softcap");
  }
  if (!(*cap > 0.0) || !std::isfinite(*cap)) {
    return invalid_argument("softcap: attribute 'cap': expected a finite value > 0, found ", *cap);
  }
  STATICLM_RETURN_IF_ERROR(check_signature(signature, 1, 1));
  const TensorSpec& x = *signature.inputs[0];
  if (x.dtype != DType::kF32 || signature.outputs[0] != x) {
    return invalid_argument("softcap: expected an f32 input and an output of the same spec, found ",
                            dtype_name(x.dtype), shape_string(x.shape));
  }
  return std::make_unique<SoftcapKernel>(static_cast<float>(*cap), num_elements(x.shape));
}

KernelResult make_gelu_kernel(const KernelSignature& signature) {
  auto approximate = signature.attributes.get_string_or("approximate", "none");
  if (!approximate.ok()) {
    return approximate.status().with_context("gelu");
  }
  if (*approximate == "none") {
    return make_unary_kernel(signature, UnaryOp::kGeluErf);
  }
  if (*approximate == "tanh") {
    return make_unary_kernel(signature, UnaryOp::kGeluTanh);
  }
  return invalid_argument("gelu: attribute 'approximate': expected none or tanh, found '", *approximate, "'");
}

}  // namespace staticlm::portable
