// SPDX-License-Identifier: Apache-2.0
// A small attention block used by the cross-package tests: token embedding (tied with the
// output projection), rms_norm, a key projection written into an in-place KV cache, a rotated
// query attending over the cache, a residual add and the logits. Small enough for a
// double-precision reference in the test, broad enough to touch every layer.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "staticlm/core/result.h"
#include "staticlm/graph/graph.h"

namespace staticlm::testing {

struct ExampleWeights {
  static constexpr int64_t kVocab = 16;
  static constexpr int64_t kHidden = 8;
  static constexpr int64_t kKvHeads = 2;
  static constexpr int64_t kHeadDim = 4;
  static constexpr int64_t kCacheLen = 8;
  static constexpr int64_t kSeq = 4;
  std::vector<float> table;    // [vocab, hidden], also the output projection
  std::vector<float> norm;     // [hidden]
  std::vector<float> w_key;    // [hidden, hidden]
  std::vector<float> w_query;  // [hidden, hidden]
  static ExampleWeights random(uint32_t seed);
};

// Builds the example graph over a fresh constant table.
Result<std::unique_ptr<Graph>> build_example_graph(const ExampleWeights& weights);

// Builds, lowers and writes the example program to `path`.
Status write_example_program(const ExampleWeights& weights, const std::string& path);

}  // namespace staticlm::testing
