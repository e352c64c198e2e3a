// SPDX-License-Identifier: Apache-2.0
// multi_linear's inputs as linears: x, then `parts` weights, then no biases or one per weight
// (docs/ops.md). The portable kernel and the cpu backend's read a signature through this one
// layout, so both agree on which input is whose.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "staticlm/core/result.h"
#include "staticlm/ops/attributes.h"
#include "staticlm/runtime/kernel.h"

namespace staticlm::portable {

class MultiLinearLayout {
 public:
  // Checks the signature's counts against its `parts` attribute: InvalidArgument naming the op.
  static Result<MultiLinearLayout> of(const KernelSignature& signature);

  int64_t parts() const { return parts_; }
  bool biased() const { return biased_; }

  // Part p's inputs as a linear's (x, weight[, bias]) into `out`; returns how many (2 or 3).
  template <class T>
  size_t linear_inputs(std::span<const T> inputs, int64_t p, T out[3]) const {
    out[0] = inputs[0];
    out[1] = inputs[static_cast<size_t>(1 + p)];
    if (!biased_) {
      return 2;
    }
    out[2] = inputs[static_cast<size_t>(1 + parts_ + p)];
    return 3;
  }

  // Part p's attributes as a linear's: the weight layout, and part p's logical shape where its
  // weight is packed.
  static Attributes linear_attributes(const Attributes& attrs, int64_t p);

 private:
  MultiLinearLayout(int64_t parts, bool biased) : parts_(parts), biased_(biased) {}

  int64_t parts_;
  bool biased_;
};

}  // namespace staticlm::portable
