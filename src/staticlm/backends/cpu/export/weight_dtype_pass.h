// WeightDtypePass: the cpu backend's `weight_dtype` option. Every matrix a node reads (a linear
// kind's weights, an embedding's table: ops/op_set.h matrix_inputs) is stored in the chosen float
// dtype, whatever dtype the exporter
// wrote, so one checkpoint exported once at f32 can be delegated at bf16 or f16 without a second
// conversion by hand. Norm weights and biases (1-D) stay as they are, as the exporter keeps them.
//
// The converted matrix is a new constant "<name>.<dtype>" in the program's shared table, found by
// name when another method (prefill, decode) asks for it again, so each is stored once; the
// original is no longer stored unless another node still reads it. Conversion is lazy: bytes are
// converted while the program is written.
#pragma once

#include <string>
#include <utility>

#include "staticlm/graph/pass_manager.h"

namespace staticlm {

class WeightDtypePass final : public GraphPass {
 public:
  // `dtype` is the option's value ("f32", "f16", "bf16"); run() refuses any other.
  explicit WeightDtypePass(std::string dtype) : dtype_(std::move(dtype)) {}
  std::string_view name() const override { return "weight_dtype"; }
  Status run(Graph& graph) override;

 private:
  std::string dtype_;
};

}  // namespace staticlm
