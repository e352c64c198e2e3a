// SPDX-License-Identifier: Apache-2.0
// The mean and sample standard deviation of a benchmark's timed runs.
#pragma once

#include <cmath>
#include <vector>

namespace staticlm::cli {

struct Sample {
  double mean = 0.0;
  double sd = 0.0;
};

inline Sample summarize(const std::vector<double>& values) {
  Sample s;
  if (values.empty()) {
    return s;
  }
  for (double v : values) {
    s.mean += v;
  }
  s.mean /= static_cast<double>(values.size());
  double squares = 0.0;
  for (double v : values) {
    squares += (v - s.mean) * (v - s.mean);
  }
  s.sd = values.size() > 1 ? std::sqrt(squares / static_cast<double>(values.size() - 1)) : 0.0;
  return s;
}

}  // namespace staticlm::cli
