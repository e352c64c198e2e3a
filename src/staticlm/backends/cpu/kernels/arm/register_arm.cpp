// SPDX-License-Identifier: Apache-2.0
// The AArch64 kernels: NEON entries for every op the cpu backend takes (float linears over f32 /
// f16 / bf16 panels, int8 / int4 panels by widening multiplies, attention, the elementwise and
// row ops), entries for int8 / int4 panels alone by sdot (dotprod) and by smmla (i8mm), and for
// bf16 panels alone by bfdot / bfmmla (bf16), each tagged with the features it needs.
#include "staticlm/backends/cpu/kernels/arm/attention_arm.h"
#include "staticlm/backends/cpu/kernels/arm/elementwise_arm.h"
#include "staticlm/backends/cpu/kernels/arm/linear_arm.h"
#include "staticlm/backends/cpu/kernels/cpu_kernel_factories.h"
#include "staticlm/backends/cpu/kernels/native_kernels.h"
#include "staticlm/backends/cpu/kernels/register.h"

namespace staticlm {
namespace {

// The portable kernels have priority 0. The bf16 entries take bf16 weights with an even K only
// (x rounded to bf16); the i8mm and dotprod entries take int8 / int4 panels only and decline
// float weights. What they decline falls through to the NEON entries.
constexpr int kNeonBf16Priority = 16;
constexpr int kNeonI8mmPriority = 14;
constexpr int kNeonDotProdPriority = 12;
constexpr int kNeonPriority = 10;

constexpr CpuFeatures kNeonFeatures = CpuFeatures().with(CpuFeature::kNeon);
constexpr CpuFeatures kNeonDotProdFeatures = kNeonFeatures.with(CpuFeature::kNeonDotProd);
constexpr CpuFeatures kNeonI8mmFeatures = kNeonDotProdFeatures.with(CpuFeature::kNeonI8mm);
constexpr CpuFeatures kNeonBf16Features = kNeonFeatures.with(CpuFeature::kNeonBf16);

using LinearFactory = Result<std::unique_ptr<Kernel>> (*)(const KernelSignature&, cpu::LinearEntryPoints);

KernelFactory linear_factory(LinearFactory make, cpu::LinearEntryPoints entry_points) {
  return [make, entry_points](const KernelSignature& signature) { return make(signature, entry_points); };
}

using ElementwiseFactory = Result<std::unique_ptr<Kernel>> (*)(const KernelSignature&, cpu::ElementwiseFns);

KernelFactory elementwise_factory(ElementwiseFactory make, cpu::ElementwiseFns fns) {
  return [make, fns](const KernelSignature& signature) { return make(signature, fns); };
}

const CpuKernelPath kPaths[] = {
    {"neon", "cpu.neon.", kNeonFeatures, cpu::exp_shifted_neon, cpu::quantize_group_neon},
};

}  // namespace

std::span<const CpuKernelPath> cpu_kernel_paths() {
  return kPaths;
}

std::string_view cpu_kernel_arch() {
  return "arm";
}

Status register_native_kernels(KernelRegistry& registry) {
  // linear, multi_linear, linear_add, swiglu_linear and qkv_rope_cache share the tiles and the
  // entries: "cpu.neon.<op>[_bf16|_i8mm|_dotprod]".
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
    // x rounded to bf16 for every call, decode included (bfdot reads the panels as stored); the
    // slices of a call's rows keep bfmmla's blocks of 4 whole.
    STATICLM_RETURN_IF_ERROR(
        registry.add({entry.op, str_cat("cpu.neon.", name, "_bf16"), kNeonBf16Features, kNeonBf16Priority,
                      linear_factory(entry.make, {.gemv = cpu::linear_columns_bf16,
                                                  .gemm = cpu::linear_columns_bf16,
                                                  .bf16 = {cpu::round_to_bf16_neon, 1, cpu::kNeonBf16BlockRows},
                                                  .swiglu = cpu::swiglu_neon,
                                                  .geglu = cpu::geglu_neon,
                                                  .add = cpu::add_neon,
                                                  .float_block_rows = cpu::kNeonBf16BlockRows,
                                                  .rotate_half = cpu::rotate_half_neon,
                                                  .rms_norm = cpu::rms_norm_neon})}));
    STATICLM_RETURN_IF_ERROR(
        registry.add({entry.op, str_cat("cpu.neon.", name, "_i8mm"), kNeonI8mmFeatures, kNeonI8mmPriority,
                      linear_factory(entry.make, {.swiglu = cpu::swiglu_neon,
                                                  .geglu = cpu::geglu_neon,
                                                  .add = cpu::add_neon,
                                                  .quantized = cpu::linear_columns_q_i8mm,
                                                  .quantize_group = cpu::quantize_group_neon,
                                                  .rotate_half = cpu::rotate_half_neon,
                                                  .rms_norm = cpu::rms_norm_neon})}));
    STATICLM_RETURN_IF_ERROR(
        registry.add({entry.op, str_cat("cpu.neon.", name, "_dotprod"), kNeonDotProdFeatures, kNeonDotProdPriority,
                      linear_factory(entry.make, {.swiglu = cpu::swiglu_neon,
                                                  .geglu = cpu::geglu_neon,
                                                  .add = cpu::add_neon,
                                                  .quantized = cpu::linear_columns_q_dotprod,
                                                  .quantize_group = cpu::quantize_group_neon,
                                                  .rotate_half = cpu::rotate_half_neon,
                                                  .rms_norm = cpu::rms_norm_neon})}));
    STATICLM_RETURN_IF_ERROR(registry.add({entry.op, str_cat("cpu.neon.", name), kNeonFeatures, kNeonPriority,
                                           linear_factory(entry.make, {.gemv = cpu::linear_columns_neon,
                                                                       .gemm = cpu::linear_columns_neon,
                                                                       .swiglu = cpu::swiglu_neon,
                                                                       .geglu = cpu::geglu_neon,
                                                                       .add = cpu::add_neon,
                                                                       .quantized = cpu::linear_columns_q_neon,
                                                                       .quantize_group = cpu::quantize_group_neon,
                                                                       .float_block_rows = cpu::kNeonFloatBlockRows,
                                                                       .rotate_half = cpu::rotate_half_neon,
                                                                       .rms_norm = cpu::rms_norm_neon})}));
  }
  // attention and windowed_attention (Gemma's and Mistral's local layers) share their kernels.
  const auto neon_attention = [](const KernelSignature& signature) {
    return cpu::make_attention_kernel(
        signature, {cpu::attention_scores_neon, cpu::attention_weighted_sum_neon, cpu::attention_softmax_neon,
                    cpu::attention_tile_neon, cpu::kTileQueriesNeon, cpu::attention_softcap_neon});
  };
  STATICLM_RETURN_IF_ERROR(
      registry.add({OpKind::kAttention, "cpu.neon.attention", kNeonFeatures, kNeonPriority, neon_attention}));
  STATICLM_RETURN_IF_ERROR(registry.add(
      {OpKind::kWindowedAttention, "cpu.neon.windowed_attention", kNeonFeatures, kNeonPriority, neon_attention}));
  // The elementwise and row ops, each under "cpu.neon.<op>".
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
    STATICLM_RETURN_IF_ERROR(registry.add({entry.op, str_cat("cpu.neon.", op_name(entry.op)), kNeonFeatures,
                                           kNeonPriority, elementwise_factory(entry.make, cpu::kElementwiseNeon)}));
  }
  return ok_status();
}

}  // namespace staticlm
