// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/portable/kernel_test_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "staticlm/backends/portable/element_access.h"
#include "staticlm/backends/portable/register.h"
#include "staticlm/core/half.h"
#include "staticlm/core/thread_pool.h"
#include "staticlm/runtime/kernel_registry.h"

namespace staticlm::portable_test {

Tensor new_tensor(DType dtype, const Shape& shape) {
  auto tensor = Tensor::zeros(dtype, shape);
  if (!tensor.ok()) {
    ADD_FAILURE() << "cannot allocate " << shape_string(shape) << ": " << tensor.status().to_string();
    return Tensor();
  }
  return std::move(tensor).value();
}

Tensor random_tensor(DType dtype, const Shape& shape, std::mt19937& rng, float low, float high) {
  Tensor tensor = new_tensor(dtype, shape);
  std::uniform_real_distribution<float> dist(low, high);
  if (dtype == DType::kQ8_0) {  // uniform values quantized as a q8_0 cache stores them
    std::vector<float> values(static_cast<size_t>(tensor.numel()));
    for (float& value : values) {
      value = dist(rng);
    }
    portable::quantize_q8_0(values.data(), tensor.numel(), tensor.data<uint8_t>());
    return tensor;
  }
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    const float value = dist(rng);
    switch (dtype) {
      case DType::kF16: tensor.data<uint16_t>()[i] = f32_to_f16(value); break;
      case DType::kBF16: tensor.data<uint16_t>()[i] = f32_to_bf16(value); break;
      case DType::kF32: tensor.data<float>()[i] = value; break;
      default: ADD_FAILURE() << "random_tensor: unsupported dtype " << dtype_name(dtype); return tensor;
    }
  }
  return tensor;
}

Tensor f32_tensor(const Shape& shape, const std::vector<float>& values) {
  Tensor tensor = new_tensor(DType::kF32, shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), tensor.numel());
  std::memcpy(tensor.data<float>(), values.data(), std::min(values.size() * sizeof(float), tensor.nbytes()));
  return tensor;
}

Tensor index_tensor(DType dtype, const std::vector<int64_t>& values) {
  Tensor tensor = new_tensor(dtype, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kI32) {
      tensor.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
    } else {
      tensor.data<int64_t>()[i] = values[i];
    }
  }
  return tensor;
}

std::vector<double> to_doubles(const Tensor& tensor) {
  std::vector<double> values(static_cast<size_t>(tensor.numel()));
  for (size_t i = 0; i < values.size(); ++i) {
    switch (tensor.dtype()) {
      case DType::kF32: values[i] = tensor.data<float>()[i]; break;
      case DType::kF16: values[i] = f16_to_f32(tensor.data<uint16_t>()[i]); break;
      case DType::kBF16: values[i] = bf16_to_f32(tensor.data<uint16_t>()[i]); break;
      case DType::kI32: values[i] = tensor.data<int32_t>()[i]; break;
      case DType::kI64: values[i] = static_cast<double>(tensor.data<int64_t>()[i]); break;
      default: ADD_FAILURE() << "to_doubles: unsupported dtype " << dtype_name(tensor.dtype()); return values;
    }
  }
  return values;
}

Result<std::vector<TensorSpec>> output_specs(OpKind op, const std::vector<const Tensor*>& inputs,
                                             const Attributes& attrs) {
  std::vector<TensorSpec> specs(inputs.size());
  std::vector<const TensorSpec*> spec_ptrs(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] != nullptr) {
      specs[i] = TensorSpec{inputs[i]->dtype(), inputs[i]->shape()};
      spec_ptrs[i] = &specs[i];
    }
  }
  return infer_outputs(op, spec_ptrs, attrs);
}

Result<std::unique_ptr<Kernel>> make_kernel(OpKind op, const std::vector<const TensorSpec*>& inputs,
                                            const std::vector<TensorSpec>& outputs, const Attributes& attrs) {
  KernelRegistry registry;
  STATICLM_RETURN_IF_ERROR(register_portable_kernels(registry));
  const std::vector<const KernelEntry*> kernels = registry.kernels_of(op);
  if (kernels.empty()) {
    return not_found("no portable kernel for ", op_name(op));
  }
  const KernelSignature signature{op, inputs, outputs, attrs};
  return kernels.front()->factory(signature);
}

Result<std::vector<Tensor>> run_op(OpKind op, const std::vector<Tensor*>& inputs, const Attributes& attrs) {
  static const KernelRegistry* portable = [] {
    auto* registry = new KernelRegistry();
    EXPECT_TRUE(register_portable_kernels(*registry).ok());
    return registry;
  }();
  return run_op_with(*portable, CpuFeatures(), op, inputs, attrs);
}

Result<std::vector<Tensor>> run_op_with(const KernelRegistry& registry, CpuFeatures allowed, OpKind op,
                                        const std::vector<Tensor*>& inputs, const Attributes& attrs,
                                        std::string* kernel_name, const ChunkPadding& chunk) {
  static ThreadPool pool(2);
  std::vector<const Tensor*> const_inputs(inputs.begin(), inputs.end());
  STATICLM_ASSIGN_OR_RETURN(std::vector<TensorSpec> out_specs, output_specs(op, const_inputs, attrs));
  std::vector<TensorSpec> in_specs(inputs.size());
  std::vector<const TensorSpec*> in_spec_ptrs(inputs.size(), nullptr);
  std::vector<TensorView> in_views(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] != nullptr) {
      in_specs[i] = TensorSpec{inputs[i]->dtype(), inputs[i]->shape()};
      in_spec_ptrs[i] = &in_specs[i];
      in_views[i] = inputs[i]->view();
    }
  }
  STATICLM_ASSIGN_OR_RETURN(SelectedKernel selected,
                            registry.select(KernelSignature{op, in_spec_ptrs, out_specs, attrs}, allowed));
  if (kernel_name != nullptr) {
    *kernel_name = selected.name;
  }

  std::vector<Tensor> outputs;
  std::vector<TensorView> out_views;
  for (const TensorSpec& spec : out_specs) {
    STATICLM_ASSIGN_OR_RETURN(Tensor tensor, Tensor::zeros(spec.dtype, spec.shape));
    if (spec.dtype == DType::kF32) {
      std::fill_n(tensor.data<float>(), tensor.numel(), chunk.fill);
    }
    outputs.push_back(std::move(tensor));
  }
  for (Tensor& tensor : outputs) {
    out_views.push_back(tensor.view());
  }
  const std::vector<InPlaceUpdate> updates = in_place_updates(op, attrs);
  for (const InPlaceUpdate& update : updates) {
    out_views[update.output] = in_views[update.input];
  }
  KernelContext context{&pool};
  context.chunk_rows = chunk.chunk_rows;
  context.padding_rows = chunk.padding_rows;
  STATICLM_RETURN_IF_ERROR(selected.kernel->execute(in_views, out_views, context));
  for (const InPlaceUpdate& update : updates) {
    const Tensor& source = *inputs[update.input];
    std::memcpy(outputs[update.output].bytes().data(), source.bytes().data(), source.nbytes());
  }
  return outputs;
}

void expect_close(const Tensor& got, const std::vector<double>& want, double rel_tol, double abs_tol) {
  ASSERT_TRUE(got.dtype() == DType::kF32 || got.dtype() == DType::kF16) << dtype_name(got.dtype());
  ASSERT_EQ(static_cast<size_t>(got.numel()), want.size());
  const std::vector<double> values = to_doubles(got);
  int reported = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double value = values[i];
    const double tolerance = rel_tol * std::fabs(want[i]) + abs_tol;
    if (!(std::fabs(value - want[i]) <= tolerance)) {
      ADD_FAILURE() << "element " << i << ": got " << value << ", want " << want[i] << " (tolerance " << tolerance
                    << ")";
      if (++reported == 5) {
        return;
      }
    }
  }
}

}  // namespace staticlm::portable_test
