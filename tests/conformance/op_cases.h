// SPDX-License-Identifier: Apache-2.0
// The backend conformance table: one list of op instances (shapes including odd sizes, every
// dtype an op takes, attributes) that tests/backend_conformance_test.cpp runs on every registered
// backend and compares with the portable kernels. A new backend (or a new kernel of one) passes
// it or says why not; benchmarks can draw their shapes from it too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "staticlm/core/tensor.h"
#include "staticlm/ops/attributes.h"
#include "staticlm/ops/op_set.h"

namespace staticlm::conformance {

// How an input's values are drawn.
enum class Fill : uint8_t {
  kUniform,   // floats in [-1, 1) (quantized: blocks quantized from such floats)
  kIds,       // integers in [0, limit)
  kExplicit,  // `values`, as given (positions, with -1 for padding rows)
};

struct CaseInput {
  TensorSpec spec;
  bool constant = false;  // a weight stored in the program; otherwise a method input
  Fill fill = Fill::kUniform;
  int64_t limit = 0;
  std::vector<int64_t> values;
};

struct OpCase {
  std::string name;  // unique; letters, digits and '_'
  OpKind op;
  std::vector<CaseInput> inputs;  // in the op's input order
  Attributes attributes;
  double tolerance = 1e-5;  // relative, against the portable kernels (absolute below 1)
};

const std::vector<OpCase>& op_cases();

}  // namespace staticlm::conformance
