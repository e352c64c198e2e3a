// SPDX-License-Identifier: Apache-2.0
// The x86 kernels: AVX-512 (with VNNI, BF16 and AMX tiles where the CPU has them) and AVX2 entries
// for every op the cpu backend takes, each tagged with the features it needs.
#include "staticlm/backends/cpu/kernels/cpu_kernel_factories.h"
#include "staticlm/backends/cpu/kernels/native_kernels.h"
#include "staticlm/backends/cpu/kernels/register.h"
#include "staticlm/backends/cpu/kernels/x86/attention_x86.h"
#include "staticlm/backends/cpu/kernels/x86/elementwise_x86.h"
#include "staticlm/backends/cpu/kernels/x86/linear_x86.h"

namespace staticlm {
namespace {

// Wider instruction sets first; the portable kernels have priority 0. The AVX-512 entries decode
// (one row) with the 512-bit GEMV, four streams per thread (two on Intel, linear_avx512.cpp),
// which reads memory faster than the 256-bit one with two (linear_bench gemv_f32_avx512 against
// gemv_f32_avx2).
// The amx entry takes bf16 weights only and multiplies bf16 tiles at prefill (tdpbf16ps); the
// amx_int8 entry takes int8 / int4 panels only and multiplies int8 tiles at prefill (tdpbsud),
// decoding with vpdpbusd; the bf16 entry takes bf16 weights only and multiplies bf16 pairs at
// prefill (vdpbf16ps); the vnni entries take int8 / int4 panels only (vpdpbusd: AVX-512 VNNI,
// or AVX-VNNI's 256-bit one on AVX2 cores); the others take int8 / int4 through the AVX2
// integer path, which computes exactly what vpdpbusd does.
constexpr int kAmxBf16Priority = 35;
constexpr int kAmxInt8Priority = 27;
constexpr int kAvx512Bf16Priority = 30;
constexpr int kAvx512VnniPriority = 25;
constexpr int kAvx512Priority = 20;
constexpr int kAvxVnniPriority = 12;
constexpr int kAvx2Priority = 10;

constexpr CpuFeatures kAvx2Features = CpuFeatures().with(CpuFeature::kAvx2);
constexpr CpuFeatures kAvxVnniFeatures = kAvx2Features.with(CpuFeature::kAvxVnni);
constexpr CpuFeatures kAvx512Features = kAvx2Features.with(CpuFeature::kAvx512);
constexpr CpuFeatures kAvx512Bf16Features = kAvx512Features.with(CpuFeature::kAvx512Bf16);
constexpr CpuFeatures kAmxBf16Features = kAvx512Bf16Features.with(CpuFeature::kAmxBf16);
constexpr CpuFeatures kAvx512VnniFeatures = kAvx512Features.with(CpuFeature::kAvx512Vnni);
constexpr CpuFeatures kAmxInt8Features = kAvx512VnniFeatures.with(CpuFeature::kAmxInt8);

using LinearFactory = Result<std::unique_ptr<Kernel>> (*)(const KernelSignature&, cpu::LinearEntryPoints);

KernelFactory linear_factory(LinearFactory make, cpu::LinearEntryPoints entry_points) {
  return [make, entry_points](const KernelSignature& signature) { return make(signature, entry_points); };
}

// The entries whose chunk GEMM multiplies bf16 weights as bf16 (tiles or pairs, `gemm`): x is
// rounded once per call; decode and the other calls run the AVX-512 GEMV / GEMM.
cpu::LinearEntryPoints bf16_entry_points(cpu::LinearColumnsFn gemm, int64_t min_rows, int64_t block_rows) {
  return {.gemv = cpu::linear_columns_avx512,
          .gemm = gemm,
          .bf16 = {cpu::round_to_bf16_avx512bf16, min_rows, block_rows},
          .swiglu = cpu::swiglu_avx512,
          .geglu = cpu::geglu_avx512,
          .add = cpu::add_avx512,
          .float_block_rows = cpu::kAvxFloatBlockRows,
          .rotate_half = cpu::rotate_half_avx512,
          .rms_norm = cpu::rms_norm_avx512};
}

// The AVX-512 entries that take int8 / int4 panels only, run by `quantized` (decode and chunks
// alike).
cpu::LinearEntryPoints quantized_entry_points(cpu::LinearColumnsFn quantized) {
  return {.swiglu = cpu::swiglu_avx512,
          .geglu = cpu::geglu_avx512,
          .add = cpu::add_avx512,
          .quantized = quantized,
          .quantize_group = cpu::quantize_group_avx512,
          .rotate_half = cpu::rotate_half_avx512,
          .rms_norm = cpu::rms_norm_avx512};
}

using ElementwiseFactory = Result<std::unique_ptr<Kernel>> (*)(const KernelSignature&, cpu::ElementwiseFns);

KernelFactory elementwise_factory(ElementwiseFactory make, cpu::ElementwiseFns fns) {
  return [make, fns](const KernelSignature& signature) { return make(signature, fns); };
}

KernelFactory attention_factory(cpu::AttentionRowFns fns) {
  return [fns](const KernelSignature& signature) { return cpu::make_attention_kernel(signature, fns); };
}

const CpuKernelPath kPaths[] = {
    {"avx512", "cpu.avx512.", kAvx512Features, cpu::exp_shifted_avx512, cpu::quantize_group_avx512},
    {"avx2", "cpu.avx2.", kAvx2Features, cpu::exp_shifted_avx2, cpu::quantize_group_avx2},
};

}  // namespace

std::span<const CpuKernelPath> cpu_kernel_paths() {
  return kPaths;
}

std::string_view cpu_kernel_arch() {
  return "x86";
}

Status register_native_kernels(KernelRegistry& registry) {
  // linear, multi_linear, linear_add, swiglu_linear and qkv_rope_cache share the tiles and the entries:
  // "cpu.<isa>.<op>[_amx|_amx_int8|_bf16|_vnni]".
  struct LinearOp {
    OpKind op;
    LinearFactory make;
  };
  const LinearOp linear_ops[] = {{OpKind::kLinear, cpu::make_linear_kernel},
                                 {OpKind::kMultiLinear, cpu::make_multi_linear_kernel},
                                 {OpKind::kLinearAdd, cpu::make_linear_add_kernel},
                                 {OpKind::kSwigluLinear, cpu::make_swiglu_linear_kernel},
                                 {OpKind::kGegluLinear, cpu::make_swiglu_linear_kernel},
                                 {OpKind::kQkvRopeCache, cpu::make_qkv_rope_cache_kernel}};
  for (const LinearOp& entry : linear_ops) {
    const std::string_view name = op_name(entry.op);
    STATICLM_RETURN_IF_ERROR(
        registry.add({entry.op, str_cat("cpu.avx512.", name, "_amx"), kAmxBf16Features, kAmxBf16Priority,
                      linear_factory(entry.make, bf16_entry_points(cpu::linear_columns_amx_bf16, cpu::kTileMinRows,
                                                                   cpu::kTileBlockRows))}));
    STATICLM_RETURN_IF_ERROR(
        registry.add({entry.op, str_cat("cpu.avx512.", name, "_bf16"), kAvx512Bf16Features, kAvx512Bf16Priority,
                      linear_factory(entry.make, bf16_entry_points(cpu::linear_columns_avx512_bf16, cpu::kPackedMinRows,
                                                                   cpu::kPackedBlockRows))}));
    STATICLM_RETURN_IF_ERROR(
        registry.add({entry.op, str_cat("cpu.avx512.", name, "_amx_int8"), kAmxInt8Features, kAmxInt8Priority,
                      linear_factory(entry.make, quantized_entry_points(cpu::linear_columns_q_amx))}));
    STATICLM_RETURN_IF_ERROR(
        registry.add({entry.op, str_cat("cpu.avx512.", name, "_vnni"), kAvx512VnniFeatures, kAvx512VnniPriority,
                      linear_factory(entry.make, quantized_entry_points(cpu::linear_columns_q_avx512vnni))}));
    STATICLM_RETURN_IF_ERROR(registry.add({entry.op, str_cat("cpu.avx512.", name), kAvx512Features, kAvx512Priority,
                                           linear_factory(entry.make, {.gemv = cpu::linear_columns_avx512,
                                                                       .gemm = cpu::linear_columns_avx512,
                                                                       .swiglu = cpu::swiglu_avx512,
                                                                       .geglu = cpu::geglu_avx512,
                                                                       .add = cpu::add_avx512,
                                                                       .quantized = cpu::linear_columns_q_avx2,
                                                                       .quantize_group = cpu::quantize_group_avx512,
                                                                       .gemm_panels = 2,
                                                                       .float_block_rows = cpu::kAvxFloatBlockRows,
                                                                       .rotate_half = cpu::rotate_half_avx512,
                                                                       .rms_norm = cpu::rms_norm_avx512})}));
    STATICLM_RETURN_IF_ERROR(
        registry.add({entry.op, str_cat("cpu.avx2.", name, "_vnni"), kAvxVnniFeatures, kAvxVnniPriority,
                      linear_factory(entry.make, {.swiglu = cpu::swiglu_avx2,
                                                  .geglu = cpu::geglu_avx2,
                                                  .add = cpu::add_avx2,
                                                  .quantized = cpu::linear_columns_q_avx_vnni,
                                                  .quantize_group = cpu::quantize_group_avx2,
                                                  .rotate_half = cpu::rotate_half_avx2,
                                                  .rms_norm = cpu::rms_norm_avx2})}));
    STATICLM_RETURN_IF_ERROR(registry.add({entry.op, str_cat("cpu.avx2.", name), kAvx2Features, kAvx2Priority,
                                           linear_factory(entry.make, {.gemv = cpu::linear_columns_avx2,
                                                                       .gemm = cpu::linear_columns_avx2,
                                                                       .swiglu = cpu::swiglu_avx2,
                                                                       .geglu = cpu::geglu_avx2,
                                                                       .add = cpu::add_avx2,
                                                                       .quantized = cpu::linear_columns_q_avx2,
                                                                       .quantize_group = cpu::quantize_group_avx2,
                                                                       .float_block_rows = cpu::kAvxFloatBlockRows,
                                                                       .rotate_half = cpu::rotate_half_avx2,
                                                                       .rms_norm = cpu::rms_norm_avx2})}));
  }
  // attention and windowed_attention (Gemma's and Mistral's local layers) share their kernels.
  const cpu::AttentionRowFns avx512_attention{cpu::attention_scores_avx512,  cpu::attention_weighted_sum_avx512,
                                              cpu::attention_softmax_avx512, cpu::attention_tile_avx512,
                                              cpu::kTileQueriesAvx512,       cpu::attention_softcap_avx512};
  const cpu::AttentionRowFns avx2_attention{cpu::attention_scores_avx2,  cpu::attention_weighted_sum_avx2,
                                            cpu::attention_softmax_avx2, cpu::attention_tile_avx2,
                                            cpu::kTileQueriesAvx2,       cpu::attention_softcap_avx2};
  STATICLM_RETURN_IF_ERROR(registry.add({OpKind::kAttention, "cpu.avx512.attention", kAvx512Features, kAvx512Priority,
                                         attention_factory(avx512_attention)}));
  STATICLM_RETURN_IF_ERROR(registry.add({OpKind::kWindowedAttention, "cpu.avx512.windowed_attention", kAvx512Features,
                                         kAvx512Priority, attention_factory(avx512_attention)}));
  STATICLM_RETURN_IF_ERROR(registry.add(
      {OpKind::kAttention, "cpu.avx2.attention", kAvx2Features, kAvx2Priority, attention_factory(avx2_attention)}));
  STATICLM_RETURN_IF_ERROR(registry.add({OpKind::kWindowedAttention, "cpu.avx2.windowed_attention", kAvx2Features,
                                         kAvx2Priority, attention_factory(avx2_attention)}));
  // The elementwise and row ops, each under "cpu.<isa>.<op>".
  struct ElementwiseOp {
    OpKind op;
    ElementwiseFactory make;
  };
  const ElementwiseOp elementwise_ops[] = {
      {OpKind::kSwiglu, cpu::make_swiglu_kernel},   {OpKind::kGeglu, cpu::make_swiglu_kernel},
      {OpKind::kAdd, cpu::make_add_kernel},         {OpKind::kMul, cpu::make_mul_kernel},
      {OpKind::kSoftcap, cpu::make_softcap_kernel}, {OpKind::kRmsNorm, cpu::make_rms_norm_kernel},
      {OpKind::kRope, cpu::make_rope_kernel}};
  for (const ElementwiseOp& entry : elementwise_ops) {
    STATICLM_RETURN_IF_ERROR(registry.add({entry.op, str_cat("cpu.avx512.", op_name(entry.op)), kAvx512Features,
                                           kAvx512Priority, elementwise_factory(entry.make, cpu::kElementwiseAvx512)}));
    STATICLM_RETURN_IF_ERROR(registry.add({entry.op, str_cat("cpu.avx2.", op_name(entry.op)), kAvx2Features,
                                           kAvx2Priority, elementwise_factory(entry.make, cpu::kElementwiseAvx2)}));
  }
  return ok_status();
}

}  // namespace staticlm
