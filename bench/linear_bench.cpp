// SPDX-License-Identifier: Apache-2.0
// Micro-benchmarks of the cpu backend's linear kernels through the registry, as the runtime
// selects them: the decode GEMV (one row) and the prefill GEMM (a chunk of rows) on the SmolLM-135M
// and Llama-3.2-1B projection shapes, per weight dtype and ISA cap. Counters: GB/s of weights
// (what bounds the GEMV) and GFLOP/s (what bounds the GEMM).
//
//   build/release/bin/linear_bench --benchmark_filter=gemv
#include <string>
#include <vector>

#include "staticlm/ops/weight_layout.h"

#include "kernel_bench.h"

namespace staticlm {
namespace {

void run_linear(benchmark::State& state, DType weight_dtype, const char* isa) {
  const int64_t rows = state.range(0);
  const int64_t inner = state.range(1);
  const int64_t columns = state.range(2);
  const Tensor x = bench::filled(DType::kF32, {rows, inner});
  // Packed as the cpu backend exports it (its kernels read nothing else); the bytes do not matter.
  const PanelLayout layout = PanelLayout::of(columns, inner, weight_dtype);
  const Tensor weight = bench::filled(weight_dtype, layout.packed_shape());
  Attributes attrs;
  attrs.set(std::string(kWeightLayoutAttr), std::string(kPanel32Layout));
  attrs.set(std::string(kWeightShapesAttr), std::vector<int64_t>{columns, inner});
  Tensor out = bench::filled(DType::kF32, {rows, columns});
  bench::run_kernel(state, OpKind::kLinear, {&x, &weight}, {&out}, attrs, isa, static_cast<int>(state.range(3)),
                    static_cast<double>(weight.nbytes()), 2.0 * static_cast<double>(rows * inner * columns));
}

// The same over int8 / int4 panels in groups of 32 (q8_0's and q4_0's bits); x is quantized per
// call, as the kernels do. GFLOP/s counts a multiply-add as two, as for float.
void run_quantized_linear(benchmark::State& state, PanelCodes codes, const char* isa) {
  const int64_t rows = state.range(0);
  const int64_t inner = state.range(1);
  const int64_t columns = state.range(2);
  const Tensor x = bench::filled(DType::kF32, {rows, inner});
  const PanelLayout layout = PanelLayout::quantized(columns, inner, codes, 32);
  const Tensor weight = bench::filled(DType::kU8, layout.packed_shape());
  Attributes attrs;
  attrs.set(std::string(kWeightLayoutAttr), std::string(panel_layout_name(codes)));
  attrs.set(std::string(kWeightShapesAttr), std::vector<int64_t>{columns, inner});
  attrs.set(std::string(kWeightGroupAttr), int64_t{32});
  Tensor out = bench::filled(DType::kF32, {rows, columns});
  bench::run_kernel(state, OpKind::kLinear, {&x, &weight}, {&out}, attrs, isa, static_cast<int>(state.range(3)),
                    static_cast<double>(weight.nbytes()), 2.0 * static_cast<double>(rows * inner * columns));
}

// {rows, inner, columns, threads}: SmolLM gate/up (576 -> 1536), its lm_head (576 -> 49152,
// 113 MB at f32: beyond a Zen 4's 32 MB L3, not a 480 MB Xeon L3), Llama-3.2-1B's gate/up
// (2048 -> 8192), and 4096 -> 65536 (1 GiB at f32, 512 MiB at 16 bits: streamed from memory on
// any host, as a decode step's weights are).
void gemv_shapes(benchmark::internal::Benchmark* b) {
  bench::on_one_and_two_threads(b, {{1, 576, 1536}, {1, 576, 49152}, {1, 2048, 8192}, {1, 4096, 65536}});
}

// {rows, inner, columns, threads}: SmolLM gate / up, Llama-3.2-1B's gate / up and down (weights
// from memory), one K block of one panel pair (every operand in L1: the micro-kernel alone), and
// SmolLM's o_proj and down_proj (9 items of 64 columns: cut into slices of rows on two threads).
void gemm_shapes(benchmark::internal::Benchmark* b) {
  bench::on_one_and_two_threads(
      b, {{128, 576, 1536}, {128, 2048, 8192}, {128, 8192, 2048}, {126, 128, 64}, {128, 576, 576}, {128, 1536, 576}});
}

// {rows, inner, columns, threads}: calls of a few rows (a short prompt), which stream the panels
// up to kStreamedRowsF32 / F16 rows and run the chunk GEMM above: SmolLM's gate / up and a
// 512 MiB (f32) matrix read from memory on any host.
void few_rows_shapes(benchmark::internal::Benchmark* b) {
  for (int64_t rows : {2, 8, 16, 32, 48}) {
    b->Args({rows, 576, 3072, 2});
    b->Args({rows, 4096, 32768, 2});
  }
  b->UseRealTime();
}

STATICLM_BENCH_CASE(gemv_f32_avx512, gemv_shapes, run_linear, DType::kF32, "avx512");
STATICLM_BENCH_CASE(gemv_f32_avx2, gemv_shapes, run_linear, DType::kF32, "avx2");
STATICLM_BENCH_CASE(gemv_bf16_avx512, gemv_shapes, run_linear, DType::kBF16, "avx512");
STATICLM_BENCH_CASE(gemv_f16_avx512, gemv_shapes, run_linear, DType::kF16, "avx512");
STATICLM_BENCH_CASE(gemv_bf16_avx2, gemv_shapes, run_linear, DType::kBF16, "avx2");
STATICLM_BENCH_CASE(gemv_f16_avx2, gemv_shapes, run_linear, DType::kF16, "avx2");
STATICLM_BENCH_CASE(gemm_f32_avx512, gemm_shapes, run_linear, DType::kF32, "avx512");
STATICLM_BENCH_CASE(gemm_f32_avx2, gemm_shapes, run_linear, DType::kF32, "avx2");
STATICLM_BENCH_CASE(gemm_bf16_avx512, gemm_shapes, run_linear, DType::kBF16, "avx512");
STATICLM_BENCH_CASE(gemm_bf16_avx2, gemm_shapes, run_linear, DType::kBF16, "avx2");
STATICLM_BENCH_CASE(gemm_q8_amx, gemm_shapes, run_quantized_linear, PanelCodes::kInt8, "amx");
STATICLM_BENCH_CASE(gemm_q8_avx512, gemm_shapes, run_quantized_linear, PanelCodes::kInt8, "avx512");
STATICLM_BENCH_CASE(gemm_q4_amx, gemm_shapes, run_quantized_linear, PanelCodes::kInt4, "amx");
STATICLM_BENCH_CASE(gemm_q4_avx512, gemm_shapes, run_quantized_linear, PanelCodes::kInt4, "avx512");
STATICLM_BENCH_CASE(gemm_q8_avx2, gemm_shapes, run_quantized_linear, PanelCodes::kInt8, "avx2");
STATICLM_BENCH_CASE(gemm_q4_avx2, gemm_shapes, run_quantized_linear, PanelCodes::kInt4, "avx2");
STATICLM_BENCH_CASE(few_rows_f32_avx512, few_rows_shapes, run_linear, DType::kF32, "avx512");
STATICLM_BENCH_CASE(few_rows_f16_avx512, few_rows_shapes, run_linear, DType::kF16, "avx512");
STATICLM_BENCH_CASE(few_rows_f16_avx2, few_rows_shapes, run_linear, DType::kF16, "avx2");
STATICLM_BENCH_CASE(few_rows_bf16_avx512, few_rows_shapes, run_linear, DType::kBF16, "avx512");
STATICLM_BENCH_CASE(few_rows_q8_amx, few_rows_shapes, run_quantized_linear, PanelCodes::kInt8, "amx");
STATICLM_BENCH_CASE(few_rows_q8_avx512, few_rows_shapes, run_quantized_linear, PanelCodes::kInt8, "avx512");
STATICLM_BENCH_CASE(few_rows_q4_amx, few_rows_shapes, run_quantized_linear, PanelCodes::kInt4, "amx");
STATICLM_BENCH_CASE(few_rows_q4_avx512, few_rows_shapes, run_quantized_linear, PanelCodes::kInt4, "avx512");

}  // namespace
}  // namespace staticlm

BENCHMARK_MAIN();
