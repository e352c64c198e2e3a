// SPDX-License-Identifier: Apache-2.0
// qkv_rope_cache: the portable kernels of the ops it replaces, run one after the other
// (docs/ops.md): multi_linear of q / k / v, the q and k norms where present (rms_norm of each
// head), rope on q and on k, and kv_cache_update (in place) of k and of v. A fused program computes what the unfused
// one did, bit for bit; the reference the cpu backend's fused kernel is checked against.
#include <memory>
#include <vector>

#include "staticlm/backends/portable/kernel_factories.h"

namespace staticlm::portable {
namespace {

namespace io = qkv_rope_cache;

class QkvRopeCacheKernel final : public Kernel {
 public:
  QkvRopeCacheKernel(std::unique_ptr<Kernel> projections, std::unique_ptr<Kernel> norm_q,
                     std::unique_ptr<Kernel> norm_k, std::unique_ptr<Kernel> rope_q, std::unique_ptr<Kernel> rope_k,
                     std::unique_ptr<Kernel> update, Shape q_rows, Shape kv_rows, Shape q_heads, Shape kv_heads)
      : projections_(std::move(projections)),
        norm_q_(std::move(norm_q)),
        norm_k_(std::move(norm_k)),
        rope_q_(std::move(rope_q)),
        rope_k_(std::move(rope_k)),
        update_(std::move(update)),
        q_rows_(std::move(q_rows)),
        kv_rows_(std::move(kv_rows)),
        q_heads_(std::move(q_heads)),
        kv_heads_(std::move(kv_heads)) {}

  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                 const KernelContext& context) const override {
    const auto kv_elements = static_cast<size_t>(num_elements(kv_rows_));
    std::vector<float> k(kv_elements);
    std::vector<float> v(kv_elements);
    // The projections: q straight into the queries output (the same floats as [B, S, Hq * D]).
    const TensorView projected[3] = {TensorView(outputs[io::kQueries].raw(), DType::kF32, q_rows_),
                                     TensorView(k.data(), DType::kF32, kv_rows_),
                                     TensorView(v.data(), DType::kF32, kv_rows_)};
    std::vector<TensorView> linear_inputs = {inputs[io::kX], inputs[io::kQWeight], inputs[io::kKWeight],
                                             inputs[io::kVWeight]};
    if (io::has_biases(inputs.size())) {
      linear_inputs.insert(linear_inputs.end(), inputs.begin() + io::kQBias, inputs.begin() + io::kQBias + 3);
    }
    STATICLM_RETURN_IF_ERROR(projections_->execute(linear_inputs, projected, context));
    const TensorView queries(outputs[io::kQueries].raw(), DType::kF32, q_heads_);
    const TensorView keys(k.data(), DType::kF32, kv_heads_);
    if (norm_q_ != nullptr) {
      // rms_norm takes a row's sum of squares before it writes the row, so it normalizes in place.
      const size_t norms = io::q_norm_input(inputs.size());
      const TensorView q_norm[2] = {queries, inputs[norms]};
      STATICLM_RETURN_IF_ERROR(norm_q_->execute(q_norm, std::span<const TensorView>(&queries, 1), context));
      const TensorView k_norm[2] = {keys, inputs[norms + 1]};
      STATICLM_RETURN_IF_ERROR(norm_k_->execute(k_norm, std::span<const TensorView>(&keys, 1), context));
    }
    // rope reads both halves of a pair before writing either, so it rotates in place.
    const TensorView q_rope[2] = {queries, inputs[io::kPositions]};
    STATICLM_RETURN_IF_ERROR(rope_q_->execute(q_rope, std::span<const TensorView>(&queries, 1), context));
    const TensorView k_rope[2] = {keys, inputs[io::kPositions]};
    STATICLM_RETURN_IF_ERROR(rope_k_->execute(k_rope, std::span<const TensorView>(&keys, 1), context));
    // Each update checks every position before it writes, so a bad one leaves both caches as
    // they were: the key cache's update fails first.
    const TensorView k_update[3] = {inputs[io::kKeyCache], keys, inputs[io::kPositions]};
    STATICLM_RETURN_IF_ERROR(update_->execute(k_update, outputs.subspan(io::kKeys, 1), context));
    const TensorView v_update[3] = {inputs[io::kValueCache], TensorView(v.data(), DType::kF32, kv_heads_),
                                    inputs[io::kPositions]};
    return update_->execute(v_update, outputs.subspan(io::kValues, 1), context);
  }

 private:
  std::unique_ptr<Kernel> projections_;
  std::unique_ptr<Kernel> norm_q_;  // both null without norms
  std::unique_ptr<Kernel> norm_k_;
  std::unique_ptr<Kernel> rope_q_;
  std::unique_ptr<Kernel> rope_k_;
  std::unique_ptr<Kernel> update_;
  Shape q_rows_;
  Shape kv_rows_;
  Shape q_heads_;
  Shape kv_heads_;
};

KernelResult with_context(KernelResult kernel, std::string_view role) {
  if (!kernel.ok()) {
    return kernel.status().with_context(str_cat("qkv_rope_cache ", role));
  }
  return kernel;
}

}  // namespace

KernelResult make_qkv_rope_cache_kernel(const KernelSignature& signature) {
  const size_t count = signature.inputs.size();
  if (count != io::kUnbiasedInputs && !io::has_biases(count) && !io::has_norms(count)) {
    return invalid_argument("qkv_rope_cache: expected ", io::kUnbiasedInputs, " or ", io::kBiasedInputs,
                            " inputs (2 more with the q and k norms), found ", count);
  }
  for (const TensorSpec* input : signature.inputs) {
    if (input == nullptr) {
      return invalid_argument("qkv_rope_cache: every input must be present");
    }
  }
  if (signature.outputs.size() != 3) {
    return invalid_argument("qkv_rope_cache: expected 3 outputs, found ", signature.outputs.size());
  }
  const TensorSpec& queries = signature.outputs[io::kQueries];
  const TensorSpec& cache = *signature.inputs[io::kKeyCache];
  if (queries.shape.size() != 4 || cache.shape.size() != 4) {
    return invalid_argument("qkv_rope_cache: expected queries [batch, seq, heads, head_dim] and caches [batch, ",
                            "kv_heads, cache_len, head_dim], found ", shape_string(queries.shape), " and ",
                            shape_string(cache.shape));
  }
  const Shape q_heads = queries.shape;
  const Shape kv_heads = {q_heads[0], q_heads[1], cache.shape[1], cache.shape[3]};
  const Shape q_rows = {q_heads[0], q_heads[1], q_heads[2] * q_heads[3]};
  const Shape kv_rows = {q_heads[0], q_heads[1], cache.shape[1] * cache.shape[3]};

  std::vector<const TensorSpec*> linear_inputs = {signature.inputs[io::kX], signature.inputs[io::kQWeight],
                                                  signature.inputs[io::kKWeight], signature.inputs[io::kVWeight]};
  if (io::has_biases(count)) {
    linear_inputs.insert(linear_inputs.end(), signature.inputs.begin() + io::kQBias,
                         signature.inputs.begin() + io::kQBias + 3);
  }
  const TensorSpec projected[3] = {{DType::kF32, q_rows}, {DType::kF32, kv_rows}, {DType::kF32, kv_rows}};
  Attributes linear_attributes = signature.attributes;
  linear_attributes.set("parts", int64_t{3});
  STATICLM_ASSIGN_OR_RETURN(
      std::unique_ptr<Kernel> projections,
      with_context(make_multi_linear_kernel({OpKind::kMultiLinear, linear_inputs, projected, linear_attributes}),
                   "projections"));

  const TensorSpec q_spec{DType::kF32, q_heads};
  const TensorSpec kv_spec{DType::kF32, kv_heads};
  std::unique_ptr<Kernel> norm_q;
  std::unique_ptr<Kernel> norm_k;
  if (io::has_norms(count)) {
    auto eps = signature.attributes.get_float("qk_norm_eps");
    if (!eps.ok()) {
      return eps.status().with_context("qkv_rope_cache");
    }
    const Attributes norm_attributes{{"eps", *eps}};
    const TensorSpec* q_norm_inputs[2] = {&q_spec, signature.inputs[io::q_norm_input(count)]};
    STATICLM_ASSIGN_OR_RETURN(
        norm_q,
        with_context(make_rms_norm_kernel({OpKind::kRmsNorm, q_norm_inputs, std::span(&q_spec, 1), norm_attributes}),
                     "q norm"));
    const TensorSpec* k_norm_inputs[2] = {&kv_spec, signature.inputs[io::q_norm_input(count) + 1]};
    STATICLM_ASSIGN_OR_RETURN(
        norm_k,
        with_context(make_rms_norm_kernel({OpKind::kRmsNorm, k_norm_inputs, std::span(&kv_spec, 1), norm_attributes}),
                     "k norm"));
  }
  const TensorSpec* q_rope_inputs[2] = {&q_spec, signature.inputs[io::kPositions]};
  STATICLM_ASSIGN_OR_RETURN(
      std::unique_ptr<Kernel> rope_q,
      with_context(make_rope_kernel({OpKind::kRope, q_rope_inputs, std::span(&q_spec, 1), signature.attributes}),
                   "q rope"));
  const TensorSpec* k_rope_inputs[2] = {&kv_spec, signature.inputs[io::kPositions]};
  STATICLM_ASSIGN_OR_RETURN(
      std::unique_ptr<Kernel> rope_k,
      with_context(make_rope_kernel({OpKind::kRope, k_rope_inputs, std::span(&kv_spec, 1), signature.attributes}),
                   "k rope"));
  const TensorSpec* update_inputs[3] = {&cache, &kv_spec, signature.inputs[io::kPositions]};
  const Attributes in_place{{"in_place", int64_t{1}}};
  STATICLM_ASSIGN_OR_RETURN(
      std::unique_ptr<Kernel> update,
      with_context(make_kv_cache_update_kernel({OpKind::kKvCacheUpdate, update_inputs, std::span(&cache, 1), in_place}),
                   "cache update"));
  return std::unique_ptr<Kernel>(std::make_unique<QkvRopeCacheKernel>(
      std::move(projections), std::move(norm_q), std::move(norm_k), std::move(rope_q), std::move(rope_k),
      std::move(update), q_rows, kv_rows, q_heads, kv_heads));
}

}  // namespace staticlm::portable
