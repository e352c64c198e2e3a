// SPDX-License-Identifier: Apache-2.0
// Micro-benchmarks of the cpu backend's attention over the static cache, as the runtime selects
// it: decode (one query row at cache position p, every query head of the SmolLM-135M and
// Llama-3.2-1B shapes) and 128-row prefill chunks (a prompt's first and fourth), f32 and f16
// caches. Counters: GB/s of the K and V slots read (what bounds decode) and GFLOP/s of the
// scores and weighted sums.
//
//   build/release/bin/attention_bench --benchmark_filter=decode
#include "kernel_bench.h"

namespace staticlm {
namespace {

constexpr int64_t kCacheLen = 2048;

// {rows, heads, kv_heads, position of the last row, threads}, head_dim 64.
void run_attention(benchmark::State& state, DType cache_dtype, const char* isa) {
  const int64_t rows = state.range(0);
  const int64_t heads = state.range(1);
  const int64_t kv_heads = state.range(2);
  const int64_t last = state.range(3);
  constexpr int64_t kHeadDim = 64;
  const Tensor q = bench::filled(DType::kF32, {1, rows, heads, kHeadDim});
  const Tensor k = bench::filled(cache_dtype, {1, kv_heads, kCacheLen, kHeadDim});
  const Tensor v = bench::filled(cache_dtype, {1, kv_heads, kCacheLen, kHeadDim});
  Tensor positions = std::move(Tensor::zeros(DType::kI32, {rows})).value();
  int64_t slots = 0;  // cache slots each query head reads, over all rows
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t p = last - (rows - 1 - r);
    positions.view().data<int32_t>()[r] = static_cast<int32_t>(p);
    slots += p + 1;
  }
  Tensor out = bench::filled(DType::kF32, {1, rows, heads, kHeadDim});
  Attributes attributes;
  attributes.set("scale", 0.125);
  const double cache_bytes = 2.0 * static_cast<double>(kv_heads * (last + 1) * kHeadDim) *
                             static_cast<double>(dtype_info(cache_dtype).block_bytes);
  const double flops = 4.0 * static_cast<double>(heads * slots * kHeadDim);
  bench::run_kernel(state, OpKind::kAttention, {&q, &k, &v, &positions}, {&out}, attributes, isa,
                    static_cast<int>(state.range(4)), cache_bytes, flops);
}

void decode_shapes(benchmark::internal::Benchmark* b) {
  bench::on_one_and_two_threads(
      b, {{1, 9, 3, 127}, {1, 32, 8, 127}, {1, 9, 3, 1023}, {1, 32, 8, 1023}, {1, 9, 3, 2047}, {1, 32, 8, 2047}});
}

void prefill_shapes(benchmark::internal::Benchmark* b) {
  // The first chunk of a prompt and the fourth (slots 384 to 511: a long prompt's attention).
  bench::on_one_and_two_threads(b, {{128, 9, 3, 127}, {128, 32, 8, 127}, {128, 9, 3, 511}, {128, 32, 8, 511}});
}

STATICLM_BENCH_CASE(decode_f32_avx512, decode_shapes, run_attention, DType::kF32, "avx512");
STATICLM_BENCH_CASE(decode_f32_avx2, decode_shapes, run_attention, DType::kF32, "avx2");
STATICLM_BENCH_CASE(decode_f16_avx512, decode_shapes, run_attention, DType::kF16, "avx512");
STATICLM_BENCH_CASE(decode_f32_portable, decode_shapes, run_attention, DType::kF32, "portable");
STATICLM_BENCH_CASE(prefill_f32_avx512, prefill_shapes, run_attention, DType::kF32, "avx512");
STATICLM_BENCH_CASE(prefill_f16_avx512, prefill_shapes, run_attention, DType::kF16, "avx512");
STATICLM_BENCH_CASE(prefill_f32_avx2, prefill_shapes, run_attention, DType::kF32, "avx2");
STATICLM_BENCH_CASE(prefill_f16_avx2, prefill_shapes, run_attention, DType::kF16, "avx2");

}  // namespace
}  // namespace staticlm

BENCHMARK_MAIN();
