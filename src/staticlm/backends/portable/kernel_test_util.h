// SPDX-License-Identifier: Apache-2.0
// Test helpers for the portable kernels: tensors filled with seeded random values, exact
// double views of their contents, and a runner that goes through the same path as the
// runtime (infer_outputs, the registry's factory, execute with a two-thread pool).
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/core/tensor.h"
#include "staticlm/ops/attributes.h"
#include "staticlm/ops/op_set.h"
#include "staticlm/runtime/kernel.h"
#include "staticlm/runtime/kernel_registry.h"

namespace staticlm::portable_test {

// A zero-filled tensor; records a test failure (and returns an empty tensor) if allocation fails.
Tensor new_tensor(DType dtype, const Shape& shape);

// Uniform random values in [low, high), rounded to `dtype` (f32, f16 or bf16).
Tensor random_tensor(DType dtype, const Shape& shape, std::mt19937& rng, float low = -1.0f, float high = 1.0f);

Tensor f32_tensor(const Shape& shape, const std::vector<float>& values);
// A rank-1 i32 or i64 tensor.
Tensor index_tensor(DType dtype, const std::vector<int64_t>& values);

// Every element, exactly, as a double (f32, f16, bf16, i32, i64).
std::vector<double> to_doubles(const Tensor& tensor);

// The output specs infer_outputs gives for `inputs` (nullptr: an absent optional input).
Result<std::vector<TensorSpec>> output_specs(OpKind op, const std::vector<const Tensor*>& inputs,
                                             const Attributes& attrs);

// Calls the registered portable factory with a signature of these specs.
Result<std::unique_ptr<Kernel>> make_kernel(OpKind op, const std::vector<const TensorSpec*>& inputs,
                                            const std::vector<TensorSpec>& outputs, const Attributes& attrs);

// Runs one op end to end and returns its outputs. Where the op updates an input in place, the
// output view is bound to that input's storage (as the runtime does) and the returned output
// is a copy of the input after the call.
Result<std::vector<Tensor>> run_op(OpKind op, const std::vector<Tensor*>& inputs, const Attributes& attrs = {});

// A left-padded chunk for run_op_with: the call's KernelContext names `padding_rows` of
// `chunk_rows` as padding, and every f32 output starts filled with `fill`, so a test sees which
// elements a kernel left unwritten.
struct ChunkPadding {
  int64_t chunk_rows = 0;
  int64_t padding_rows = 0;
  float fill = 0.0f;
};

// The same through `registry`'s selection with the features capped at `allowed` (the cpu
// backend's conformance tests run its SIMD kernels this way); the chosen entry's name goes to
// `kernel_name` when given. An in-place input is updated in place here too.
Result<std::vector<Tensor>> run_op_with(const KernelRegistry& registry, CpuFeatures allowed, OpKind op,
                                        const std::vector<Tensor*>& inputs, const Attributes& attrs = {},
                                        std::string* kernel_name = nullptr, const ChunkPadding& chunk = {});

// Expects |got[i] - want[i]| <= rel_tol * |want[i]| + abs_tol for every element of an f32 or f16
// tensor (an f16 KV cache), reporting the first few mismatches by index.
void expect_close(const Tensor& got, const std::vector<double>& want, double rel_tol = 1e-5, double abs_tol = 1e-6);

}  // namespace staticlm::portable_test
