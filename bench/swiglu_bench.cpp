// SPDX-License-Identifier: Apache-2.0
// Micro-benchmarks of the cpu backend's swiglu (silu(gate) * up with the vector exp), as the
// runtime selects it, on the SmolLM-135M and Llama-3.2-1B MLP widths: one decode row and a
// 128-row prefill chunk. Counters: GB/s of gate, up and out together, GFLOP/s counting one exp
// as one flop (so the figure compares ISAs, not machines).
//
//   build/release/bin/swiglu_bench
#include "kernel_bench.h"

namespace staticlm {
namespace {

// {rows, width, threads}
void run_swiglu(benchmark::State& state, const char* isa) {
  const int64_t rows = state.range(0);
  const int64_t width = state.range(1);
  const Tensor gate = bench::filled(DType::kF32, {rows, width});
  const Tensor up = bench::filled(DType::kF32, {rows, width});
  Tensor out = bench::filled(DType::kF32, {rows, width});
  const double elements = static_cast<double>(rows * width);
  // silu(g) * u = g / (1 + exp(-g)) * u: an exp, an add, a divide, two multiplies.
  bench::run_kernel(state, OpKind::kSwiglu, {&gate, &up}, {&out}, Attributes(), isa, static_cast<int>(state.range(2)),
                    3.0 * 4.0 * elements, 5.0 * elements);
}

void shapes(benchmark::internal::Benchmark* b) {
  bench::on_one_and_two_threads(b, {{1, 1536}, {1, 8192}, {128, 1536}, {128, 8192}});
}

STATICLM_BENCH_CASE(swiglu_avx512, shapes, run_swiglu, "avx512");
STATICLM_BENCH_CASE(swiglu_avx2, shapes, run_swiglu, "avx2");
STATICLM_BENCH_CASE(swiglu_portable, shapes, run_swiglu, "portable");

}  // namespace
}  // namespace staticlm

BENCHMARK_MAIN();
