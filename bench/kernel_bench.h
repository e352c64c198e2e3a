// SPDX-License-Identifier: Apache-2.0
// What every kernel micro-benchmark shares: the cpu backend's registry (kernels selected as the
// runtime selects them), pools of one and two threads, tensors filled with small values (the data
// does not change the speed), and one timing loop that reports a kernel's label and rate counters,
// GFLOP/s also as a fraction of the FMA peak measured in the same run.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <benchmark/benchmark.h>

#include "staticlm/backends/cpu/kernels/machine_peaks.h"
#include "staticlm/backends/cpu/kernels/register.h"
#include "staticlm/core/tensor.h"
#include "staticlm/core/thread_pool.h"

namespace staticlm::bench {

inline const KernelRegistry& registry() {
  static const KernelRegistry* made = [] {
    auto* r = new KernelRegistry();
    if (!register_cpu_kernels(*r).ok()) {
      std::abort();
    }
    return r;
  }();
  return *made;
}

inline ThreadPool& pool(int threads) {
  static ThreadPool one(1);
  static ThreadPool two(2);
  return threads == 1 ? one : two;
}

inline Tensor filled(DType dtype, const Shape& shape) {
  Tensor t = std::move(Tensor::zeros(dtype, shape)).value();
  std::memset(t.bytes().data(), 0x11, t.nbytes());
  return t;
}

// Adds every argument set of `shapes` once per thread count (1, then 2; the thread count is the
// last argument), timed by wall clock: the pool's workers are not the benchmark's thread.
inline void on_one_and_two_threads(benchmark::internal::Benchmark* b, const std::vector<std::vector<int64_t>>& shapes) {
  for (int64_t threads : {1, 2}) {
    for (std::vector<int64_t> args : shapes) {
      args.push_back(threads);
      b->Args(args);
    }
  }
  b->UseRealTime();
}

// Selects the kernel for `op` over `inputs` -> `outputs` capped at `isa`, runs it for the
// benchmark's iterations on `threads` threads and sets "GB/s" (bytes_per_call) and "GFLOP/s"
// (flops_per_call) counters. Skips with the registry's message where no kernel fits.
inline void run_kernel(benchmark::State& state, OpKind op, const std::vector<const Tensor*>& inputs,
                       const std::vector<Tensor*>& outputs, const Attributes& attributes, const char* isa, int threads,
                       double bytes_per_call, double flops_per_call) {
  std::vector<TensorSpec> input_specs;
  for (const Tensor* t : inputs) input_specs.push_back({t->dtype(), t->shape()});
  std::vector<const TensorSpec*> input_pointers;
  for (const TensorSpec& spec : input_specs) input_pointers.push_back(&spec);
  std::vector<TensorSpec> output_specs;
  for (const Tensor* t : outputs) output_specs.push_back({t->dtype(), t->shape()});
  const CpuFeatures features = cpu_features_for_isa(isa).value();
  auto selected = registry().select({op, input_pointers, output_specs, attributes}, features);
  if (!selected.ok()) {
    state.SkipWithError(selected.status().to_string().c_str());
    return;
  }
  state.SetLabel(selected->name);
  std::vector<TensorView> in_views;
  for (const Tensor* t : inputs) in_views.push_back(t->view());
  std::vector<TensorView> out_views;
  for (Tensor* t : outputs) out_views.push_back(t->view());
  const KernelContext context{&pool(threads)};
  // The f32 multiply-add peak of the same threads and ISA cap, the better of a measurement
  // before the case's loop and one after: GFLOP/s as a fraction of it is a ratio from one run.
  // On a shared host a kernel's absolute rate swings between runs minutes apart while this peak
  // holds.
  double fma_peak = cpu::measure_fma_peak(pool(threads), features, 3);
  for (auto _ : state) {
    benchmark::DoNotOptimize(selected->kernel->execute(in_views, out_views, context));
    benchmark::ClobberMemory();
  }
  fma_peak = std::max(fma_peak, cpu::measure_fma_peak(pool(threads), features, 3));  // the loop's timer has stopped
  const double iterations = static_cast<double>(state.iterations());
  state.counters["GB/s"] = benchmark::Counter(bytes_per_call * iterations / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(flops_per_call * iterations / 1e9, benchmark::Counter::kIsRate);
  state.counters["of_fma_peak"] =
      benchmark::Counter(flops_per_call * iterations / fma_peak, benchmark::Counter::kIsRate);
}

}  // namespace staticlm::bench

// One benchmark case: `name` calls run(state, args...) over the argument sets `shapes` adds.
#define STATICLM_BENCH_CASE(name, shapes, run, ...) \
  void name(benchmark::State& state) {              \
    run(state, __VA_ARGS__);                        \
  }                                                 \
  BENCHMARK(name)->Apply(shapes)
