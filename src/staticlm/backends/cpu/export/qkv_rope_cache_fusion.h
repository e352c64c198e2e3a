// SPDX-License-Identifier: Apache-2.0
// QkvRopeCacheFusion: a graph pass that folds a layer's attention inputs into one
// qkv_rope_cache node (docs/ops.md): the q / k / v multi_linear, the per-head rms_norm of q and of
// k where both have one (Qwen3's and Gemma 3's q_norm / k_norm), the rope of q and of k, and the
// in-place kv_cache_update of k and of v. The cpu kernel rotates each head and writes its
// cache rows while the head's columns are still in cache, inside the projection's one parallel
// range, instead of four serial ops and their passes over the rows.
//
// It fuses only the exact chain the exporter builds for the in-place cache form: each projection
// read by nothing but its reshape into heads, q and k by nothing but their rope (with the same
// positions and rope attributes), k and v by nothing but their cache update, and heads whose
// width is a whole number of panel32 panels (the kernel's unit of work). A norm over the whole
// projection (OLMo 2's, before the split into heads), a norm on one of q and k only, the
// returned cache form or anything else in between leaves the nodes as they are.
#pragma once

#include "staticlm/graph/pass_manager.h"

namespace staticlm {

class QkvRopeCacheFusion final : public GraphPass {
 public:
  // panel32's panel width: a head must be whole panels.
  static constexpr int64_t kHeadDimMultiple = 32;

  std::string_view name() const override { return "qkv_rope_cache_fusion"; }
  Status run(Graph& graph) override;
};

}  // namespace staticlm
