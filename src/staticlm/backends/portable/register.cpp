// SPDX-License-Identifier: Apache-2.0
#include "staticlm/backends/portable/register.h"

#include <array>
#include <utility>

#include "staticlm/backends/portable/kernel_factories.h"

namespace staticlm {
namespace {

using portable::KernelResult;

struct FactoryEntry {
  OpKind op;
  KernelResult (*make)(const KernelSignature& signature);
};

constexpr std::array<FactoryEntry, 26> kFactories = {{
    {OpKind::kEmbedding, portable::make_embedding_kernel},
    {OpKind::kLinear, portable::make_linear_kernel},
    {OpKind::kRmsNorm, portable::make_rms_norm_kernel},
    {OpKind::kLayerNorm, portable::make_layer_norm_kernel},
    {OpKind::kRope, portable::make_rope_kernel},
    {OpKind::kAttention, portable::make_attention_kernel},
    {OpKind::kKvCacheUpdate, portable::make_kv_cache_update_kernel},
    {OpKind::kAdd, portable::make_add_kernel},
    {OpKind::kMul, portable::make_mul_kernel},
    {OpKind::kSilu, portable::make_silu_kernel},
    {OpKind::kGelu, portable::make_gelu_kernel},
    {OpKind::kSoftmax, portable::make_softmax_kernel},
    {OpKind::kReshape, portable::make_reshape_kernel},
    {OpKind::kTranspose, portable::make_transpose_kernel},
    {OpKind::kSlice, portable::make_slice_kernel},
    {OpKind::kConcat, portable::make_concat_kernel},
    {OpKind::kCast, portable::make_cast_kernel},
    {OpKind::kSwiglu, portable::make_swiglu_kernel},
    {OpKind::kMultiLinear, portable::make_multi_linear_kernel},
    {OpKind::kLinearAdd, portable::make_linear_add_kernel},
    {OpKind::kSwigluLinear, portable::make_swiglu_linear_kernel},
    {OpKind::kGeglu, portable::make_swiglu_kernel},
    {OpKind::kGegluLinear, portable::make_swiglu_linear_kernel},
    {OpKind::kQkvRopeCache, portable::make_qkv_rope_cache_kernel},
    {OpKind::kWindowedAttention, portable::make_windowed_attention_kernel},
    {OpKind::kSoftcap, portable::make_softcap_kernel},
}};

}  // namespace

Status register_portable_kernels(KernelRegistry& registry) {
  for (const FactoryEntry& entry : kFactories) {
    STATICLM_RETURN_IF_ERROR(registry.add(entry.op, KernelFactory(entry.make)));
  }
  return ok_status();
}

}  // namespace staticlm
