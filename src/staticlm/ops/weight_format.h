// SPDX-License-Identifier: Apache-2.0
// The storage format of a program's matrices, as its `weight_dtype` metadata names it: a dtype
// ("f32", "bf16", "q8_0", ...) or quantized panels at a group size ("int8_g32", "int4_g128";
// ops/panel_quant.h). `staticlm bench` reads it to say what a token's bytes are.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "staticlm/core/dtype.h"
#include "staticlm/core/result.h"
#include "staticlm/ops/weight_layout.h"

namespace staticlm {

struct WeightFormat {
  DType dtype = DType::kF32;              // the stored dtype (u8 for quantized panels)
  PanelCodes codes = PanelCodes::kFloat;  // kFloat: `dtype` is the format
  int64_t group = 0;                      // quantized: k values per scale

  static WeightFormat of_dtype(DType dtype) { return {dtype, PanelCodes::kFloat, 0}; }
  static WeightFormat quantized(PanelCodes codes, int64_t group) { return {DType::kU8, codes, group}; }
  // A dtype name, or int8_g<G> / int4_g<G> with G in {16, 32, 64, 128}; InvalidArgument otherwise.
  static Result<WeightFormat> parse(std::string_view name);

  bool is_quantized() const { return codes != PanelCodes::kFloat; }
  std::string name() const;
  // Bits of storage per logical weight, scales included (int8_g32: 8.5, like q8_0).
  double bits_per_weight() const;
};

}  // namespace staticlm
