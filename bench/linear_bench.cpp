// Micro-benchmarks of the cpu backend's linear kernels through the registry, as the runtime
// selects them: the decode GEMV (one row) and the prefill GEMM (a chunk of rows) on the SmolLM-135M
// and Llama-3.2-1B projection shapes, per weight dtype and ISA cap. Counters: weight GB/s (what
// bounds the GEMV) and GFLOP/s (what bounds the GEMM).
//
//   build/release/bin/linear_bench --benchmark_filter=gemv
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "staticlm/backends/cpu/kernels/register.h"
#include "staticlm/core/tensor.h"
#include "staticlm/core/thread_pool.h"

namespace staticlm {
namespace {

struct Fixture {
  Tensor x;
  Tensor weight;
  Tensor out;
  std::unique_ptr<Kernel> kernel;
};

const KernelRegistry& registry() {
  static const KernelRegistry* made = [] {
    auto* r = new KernelRegistry();
    if (!register_cpu_kernels(*r).ok()) {
      std::abort();
    }
    return r;
  }();
  return *made;
}

ThreadPool& pool(int threads) {
  static ThreadPool one(1);
  static ThreadPool two(2);
  return threads == 1 ? one : two;
}

// Filled with small values so nothing overflows; the data does not change the speed.
Tensor filled(DType dtype, const Shape& shape) {
  Tensor t = std::move(Tensor::zeros(dtype, shape)).value();
  std::memset(t.bytes().data(), 0x11, t.nbytes());
  return t;
}

void run_linear(benchmark::State& state, DType weight_dtype, const char* isa) {
  const int64_t rows = state.range(0);
  const int64_t inner = state.range(1);
  const int64_t columns = state.range(2);
  const int threads = static_cast<int>(state.range(3));
  Fixture f;
  f.x = filled(DType::kF32, {rows, inner});
  f.weight = filled(weight_dtype, {columns, inner});
  f.out = filled(DType::kF32, {rows, columns});
  const TensorSpec x_spec{DType::kF32, {rows, inner}};
  const TensorSpec w_spec{weight_dtype, {columns, inner}};
  const std::vector<const TensorSpec*> inputs = {&x_spec, &w_spec};
  const std::vector<TensorSpec> outputs = {{DType::kF32, {rows, columns}}};
  const Attributes none;
  auto selected = registry().select({OpKind::kLinear, inputs, outputs, none}, cpu_features_for_isa(isa).value());
  if (!selected.ok()) {
    state.SkipWithError(selected.status().to_string().c_str());
    return;
  }
  state.SetLabel(selected->name);
  const std::vector<TensorView> in_views = {f.x.view(), f.weight.view()};
  const std::vector<TensorView> out_views = {f.out.view()};
  const KernelContext context{&pool(threads)};
  for (auto _ : state) {
    benchmark::DoNotOptimize(selected->kernel->execute(in_views, out_views, context));
    benchmark::ClobberMemory();
  }
  const double iterations = static_cast<double>(state.iterations());
  state.counters["weight_GB/s"] =
      benchmark::Counter(static_cast<double>(f.weight.nbytes()) * iterations / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(rows * inner * columns) * iterations / 1e9,
                                                 benchmark::Counter::kIsRate);
}

// {rows, inner, columns, threads}: SmolLM gate/up (576 -> 1536), its lm_head (576 -> 49152,
// 113 MB at f32: far beyond the caches), Llama-3.2-1B's gate/up (2048 -> 8192).
void gemv_shapes(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2}) {
    b->Args({1, 576, 1536, threads})->Args({1, 576, 49152, threads})->Args({1, 2048, 8192, threads});
  }
  b->UseRealTime();
}

void gemm_shapes(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2}) {
    b->Args({128, 576, 1536, threads})->Args({128, 2048, 8192, threads});
  }
  b->UseRealTime();
}

#define STATICLM_LINEAR_BENCH(name, dtype, isa, shapes) \
  void name(benchmark::State& state) {                  \
    run_linear(state, dtype, isa);                      \
  }                                                     \
  BENCHMARK(name)->Apply(shapes)

STATICLM_LINEAR_BENCH(gemv_f32_avx512, DType::kF32, "avx512", gemv_shapes);
STATICLM_LINEAR_BENCH(gemv_f32_avx2, DType::kF32, "avx2", gemv_shapes);
STATICLM_LINEAR_BENCH(gemv_bf16_avx512, DType::kBF16, "avx512", gemv_shapes);
STATICLM_LINEAR_BENCH(gemv_f16_avx512, DType::kF16, "avx512", gemv_shapes);
STATICLM_LINEAR_BENCH(gemm_f32_avx512, DType::kF32, "avx512", gemm_shapes);
STATICLM_LINEAR_BENCH(gemm_f32_avx2, DType::kF32, "avx2", gemm_shapes);
STATICLM_LINEAR_BENCH(gemm_bf16_avx512, DType::kBF16, "avx512", gemm_shapes);

}  // namespace
}  // namespace staticlm

BENCHMARK_MAIN();
