// SPDX-License-Identifier: Apache-2.0
// WeightDtypePass: the cpu backend's float `weight_dtype`, `lm_head_dtype` and `embedding_dtype`.
// Every matrix a node reads (a linear kind's weights, an embedding's table: ops/op_set.h
// matrix_inputs) is stored in the float dtype its role asks for (matrix_formats.h), whatever dtype
// the exporter wrote, so one checkpoint exported once at f32 can be delegated at bf16 or f16
// without a second conversion by hand. Norm weights and biases (1-D) stay as they are, as the
// exporter keeps them.
//
// The converted matrix is a new constant "<name>.<dtype>" in the program's shared table, found by
// name when another method (prefill, decode) asks for it again, so each is stored once; the
// original is no longer stored unless another node still reads it. Conversion is lazy: bytes are
// converted while the program is written.
#pragma once

#include <string>
#include <utility>

#include "staticlm/backends/cpu/export/matrix_formats.h"
#include "staticlm/graph/pass_manager.h"

namespace staticlm {

class WeightDtypePass final : public GraphPass {
 public:
  // Each matrix is converted to the float dtype its role's format names (matrix_formats.h);
  // quantized and as-exported formats leave it to pack_weights.
  explicit WeightDtypePass(MatrixFormats formats) : formats_(std::move(formats)) {}
  std::string_view name() const override { return "weight_dtype"; }
  Status run(Graph& graph) override;

 private:
  MatrixFormats formats_;
};

}  // namespace staticlm
