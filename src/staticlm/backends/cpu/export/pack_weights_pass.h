// SPDX-License-Identifier: Apache-2.0
// PackWeightsPass: the cpu backend stores every matrix its linear kernels read in the panel32
// layout (ops/weight_layout.h), so decode streams each panel of 32 outputs as one sequential read
// and prefill multiplies panels where they lie; nothing is repacked when the program loads or
// runs. It runs after the backend's other passes, on the weights they chose (weight_dtype) and
// the nodes they fused (multi_linear).
//
// A linear's weight and every weight of a multi_linear (all or none) are packed when they are
// rank-2 f32, f16 or bf16 constants; the node records the layout in its `weight_layout` and
// `weight_shapes` attributes. An embedding reads its table packed only when a linear reads the
// same constant (tied embeddings: the table and the output projection stay one tensor);
// otherwise its table stays in rows, where a gather is one contiguous read.
//
// Each matrix takes its role's format (matrix_formats.h: weight_dtype, lm_head_dtype,
// embedding_dtype): float ones are packed in the dtype weight_dtype left them; int8 / int4 ones
// are quantized into the panel32_q8 / panel32_q4 layouts (ops/panel_quant.h) from whatever float
// dtype they have, the group size in the node's `weight_group` attribute. An untied table with a
// quantized format is quantized too (a gather dequantizes its row).
//
// The packed matrix is a new constant "<name>.panel32" ("<name>.panel32_q8_g32", ...) in the
// program's shared table, found by name when another method asks for it again, so each is stored
// once. Packing is lazy: bytes are packed (and quantized) while the program is written, one
// matrix at a time.
#pragma once

#include <cstdint>
#include <utility>

#include "staticlm/backends/cpu/export/matrix_formats.h"
#include "staticlm/graph/pass_manager.h"
#include "staticlm/ops/weight_layout.h"

namespace staticlm {

class PackWeightsPass final : public GraphPass {
 public:
  explicit PackWeightsPass(MatrixFormats formats = {}) : formats_(std::move(formats)) {}
  std::string_view name() const override { return "pack_weights"; }
  Status run(Graph& graph) override;

 private:
  MatrixFormats formats_;
};

}  // namespace staticlm
